"""End to end: a prompt cut off before the gateway ran it comes back to the composer, once.

The gateway here is a small fake of the legacy dialect (hermes-agent 0.19: no heartbeat, no
replay, no submission refs, so no de-duplication): the client may never resend on its own.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage
from websockets.asyncio.server import ServerConnection, serve

from desktop.app.assembly import AppPaths
from desktop.core.link.profiles import FileTokenStore, Profile, ProfileKind
from desktop.core.models import Role
from tests.ui.e2e_support import App, add_profiles, until

pytestmark = pytest.mark.slow

TOKEN = "legacy-token-0123456789abcdef"


class LegacyGateway:
    """Answers just enough of the 0.19 protocol; `drop_next_submit` cuts the socket instead."""

    def __init__(self) -> None:
        self.drop_next_submit = True
        self.submits: list[dict[str, Any]] = []
        self.staged: list[tuple[str, str]] = []  # (method, filename) staged for the next turn
        self.turns: list[tuple[str, list[tuple[str, str]]]] = []  # prompts that ran
        self.history: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self.url = ""
        self._server: Any = None

    async def start(self) -> None:
        self._server = await serve(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"ws://127.0.0.1:{port}/api/ws"

    async def stop(self) -> None:
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, ws: ServerConnection) -> None:
        if f"token={TOKEN}" not in (ws.request.path if ws.request else ""):
            await ws.close(4001)
            return
        await ws.send(_event("gateway.ready", None, {"version": "0.19.0"}))
        async for raw in ws:
            msg = json.loads(raw)
            method, params, rid = msg.get("method"), msg.get("params") or {}, msg.get("id")
            if method == "prompt.submit":
                self.submits.append(params)
                if self.drop_next_submit:
                    self.drop_next_submit = False
                    self.staged.clear()  # the turn never started: nothing ran
                    ws.transport.abort()  # written, never answered, never run
                    return
                await ws.send(_result(rid, {"status": "streaming"}))
                await self._run_turn(ws, params)
                continue
            result = self._answer(method, params)
            if result is None:
                await ws.send(_error(rid, -32601, f"unknown method {method}"))
            else:
                await ws.send(_result(rid, result))

    def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        sid = str(params.get("session_id") or "")
        snapshot = {
            "session_id": "rt1",
            "session_key": "stored1",
            "messages": self.history,
            "running": False,
            "status": "idle",
            "info": {},
        }
        if method == "session.create":
            return {
                "session_id": "rt1",
                "stored_session_id": "stored1",
                "message_count": 0,
                "messages": [],
                "info": {},
            }
        if method in ("session.activate", "session.resume"):
            return snapshot
        if method == "session.history":
            return {"count": len(self.history), "messages": self.history}
        if method == "session.list":
            return {"sessions": [{"id": "stored1", "title": "legacy", "preview": ""}]}
        if method in ("image.attach_bytes", "file.attach_bytes"):
            self.staged.append((method, str(params.get("filename"))))
            return {"attached": True, "count": len(self.staged)}
        if method in ("session.interrupt", "session.title", "attachments.clear"):
            return {"status": "ok"} if sid else {}
        return None

    async def _run_turn(self, ws: ServerConnection, params: dict[str, Any]) -> None:
        text = str(params.get("text"))
        self.turns.append((text, list(self.staged)))
        self.staged.clear()
        reply = f"ran once: {text}"
        self.history += [{"role": "user", "text": text}, {"role": "assistant", "text": reply}]
        await ws.send(_event("message.start", "rt1", {}))
        await ws.send(_event("message.delta", "rt1", {"text": reply}))
        await ws.send(_event("message.complete", "rt1", {"text": reply, "status": "complete"}))


def _event(etype: str, sid: str | None, payload: dict[str, Any]) -> str:
    params: dict[str, Any] = {"type": etype, "payload": payload}
    if sid:
        params["session_id"] = sid
    return json.dumps({"jsonrpc": "2.0", "method": "event", "params": params})


def _result(rid: Any, result: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": result})


def _error(rid: Any, code: int, message: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


async def test_unconfirmed_prompt_with_attachments_comes_back_and_retry_sends_once(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    gateway = LegacyGateway()
    await gateway.start()
    paths = AppPaths.create(str(tmp_path))
    FileTokenStore(paths.config / "tokens.json").set("profile:legacy:1", TOKEN)
    legacy = Profile(
        "legacy", "Legacy", ProfileKind.REMOTE, url=gateway.url, token_ref="profile:legacy:1"
    )
    add_profiles(tmp_path, [legacy])
    # 0.19 stages images only (no file_attachments capability): attach a picture.
    notes = tmp_path / "plan.png"
    image = QImage(6, 6, QImage.Format.Format_RGB32)
    image.fill(QColor("blue"))
    assert image.save(str(notes), "PNG")
    app = App.open(tmp_path, qtbot)
    win, composer = app.window, app.window.composer
    try:
        win.profile_combo.setCurrentIndex(win.profile_combo.findData("legacy"))
        await app.wait_online("legacy")
        assert app.controllers["legacy"].diagnostics().dialect == "legacy"
        composer.edit.files_dropped.emit([str(notes)])  # as dropping the file on it does
        assert [a.filename for a in composer.attachments] == ["plan.png"]
        app.type_and_send(qtbot, "please run the plan")
        await until(lambda: gateway.submits, "the submit was written")
        await until(
            lambda: composer.banner.isVisibleTo(win),
            "the prompt came back with a delivery warning",
        )
        assert "Delivery not confirmed" in composer.banner_label.text()
        assert composer.edit.toPlainText() == "please run the plan"
        assert [a.filename for a in composer.attachments] == ["plan.png"], "chips came back"
        assert gateway.turns == [], "nothing ran"
        stale = [m for m in app.bubbles(Role.USER) if m.text == "please run the plan"]
        assert not stale, [(m.delivery, m.delivery_error) for m in stale]
        assert len(gateway.submits) == 1, "never resent on its own"

        qtbot.mouseClick(composer.retry_button, Qt.MouseButton.LeftButton)
        await until(lambda: len(app.finished_replies()) == 1, "the retried prompt ran")
        assert app.finished_replies()[0].text == "ran once: please run the plan"
        assert gateway.turns == [("please run the plan", [("image.attach_bytes", "plan.png")])]
        assert len(gateway.submits) == 2, "one retry, one more submit"
        assert not composer.banner.isVisibleTo(win)
        assert composer.attachments == ()
        users = [m for m in app.bubbles(Role.USER) if m.text == "please run the plan"]
        assert len(users) == 1, "the prompt shows once"
    finally:
        await app.close()
        await gateway.stop()
