"""End to end: a chat whose history is larger than a frame opens, or says why it cannot."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from desktop.app.assembly import AppPaths
from desktop.core.link.profiles import FileTokenStore, Profile, ProfileKind
from desktop.core.models import ConnectionState, Role
from desktop.gateway.providers.offline import OfflineProvider
from desktop.gateway.rpc.server import GatewayConfig, GatewayServer
from desktop.gateway.sessions.hub import SessionHub
from desktop.gateway.sessions.store import Store
from tests.ui.e2e_support import App, add_profiles, until

pytestmark = pytest.mark.slow

TOKEN = "oversize-gateway-token-0123456789abcdef"
# The repro: ten prompts just under the prompt cap, a 9.9 MB history (limit: 8 MiB).
ROWS = 10
ROW_CHARS = 990_000


def _row_text(n: int) -> str:
    line = f"row {n} " + "lorem ipsum dolor sit amet " * 40 + "\n"
    return (line * (ROW_CHARS // len(line) + 1))[:ROW_CHARS]


def seed(db_path: Path) -> None:
    """A gateway store with a 9.9 MB chat ("big") and a small one ("small")."""
    Store(db_path).close()  # the gateway's own schema
    with sqlite3.connect(db_path) as db:
        db.executemany(
            "INSERT INTO sessions(id, title, source, started_at, updated_at) VALUES (?,?,?,?,?)",
            [
                ("big", "big chat", "desktop", 1.7e9, 1.7e9),
                ("small", "small", "desktop", 1.7e9, 1.7e9),
            ],
        )
        db.executemany(
            "INSERT INTO messages(session_id, role, text, status, created_at) VALUES (?,?,?,?,?)",
            [
                ("big", "user" if n % 2 == 0 else "assistant", _row_text(n), "complete", 1.7e9 + n)
                for n in range(ROWS)
            ]
            + [
                ("small", "user", "hi", "complete", 1.7e9),
                ("small", "assistant", "hello", "complete", 1.7e9),
            ],
        )


async def test_a_chat_larger_than_a_frame_opens_in_the_app(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    seed(AppPaths.create(str(tmp_path)).data / "gateway" / "gateway.sqlite3")
    app = App.open(tmp_path, qtbot)
    try:
        await app.wait_online()
        await until(lambda: app.window.session_model.row_of("big") is not None, "big listed")
        app.window.open_session("big")
        await until(lambda: len(app.messages()) == ROWS, "the 9.9 MB chat shown", 60)
        assert [m.text for m in app.messages()] == [_row_text(n) for n in range(ROWS)]
        assert app.embedded.status().state is ConnectionState.ONLINE
        assert app.embedded.diagnostics().reconnects == ()  # the link never dropped
    finally:
        await app.close()


async def test_a_chat_whose_history_cannot_be_received_says_why(
    qloop: Any,
    qtbot: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A gateway like Hermes 0.19: ignores omit_messages, no frame limit of its own."""
    original = SessionHub.snapshot
    monkeypatch.setattr(
        SessionHub, "snapshot", lambda self, session, omit_messages=False: original(self, session)
    )
    seed(tmp_path / "remote-gw" / "gateway.sqlite3")
    remote = GatewayServer(
        GatewayConfig(data_dir=tmp_path / "remote-gw", token=TOKEN, max_frame=64 * 2**20),
        OfflineProvider(chunk_interval=0),
    )
    url = await remote.start()
    paths = AppPaths.create(str(tmp_path))
    FileTokenStore(paths.config / "tokens.json").set("profile:remote:1", TOKEN)
    add_profiles(
        tmp_path,
        [Profile("remote", "Remote", ProfileKind.REMOTE, url=url, token_ref="profile:remote:1")],
    )
    app = App.open(tmp_path, qtbot)
    win = app.window
    caplog.set_level(logging.WARNING, logger="desktop")
    try:
        await app.wait_online("remote")
        win.profile_combo.setCurrentIndex(win.profile_combo.findData("remote"))
        await until(lambda: win.session_model.row_of("big") is not None, "big listed")
        win.open_session("big")
        await until(
            lambda: any("could not be loaded" in m.text for m in app.messages()),
            "the chat says why it is empty",
        )
        error = app.messages()[0]
        assert error.role is Role.SYSTEM and "larger than this app accepts" in error.text
        assert "exceeds limit of 8388608" in error.text  # the cause, in the user's words too
        await app.wait_online("remote")
        win.open_session("small")  # the rest of the profile keeps working
        await until(lambda: [m.text for m in app.messages()] == ["hi", "hello"], "small shown")
        app.type_and_send(qtbot, "still working?")
        await until(lambda: len(app.finished_replies()) == 2, "a reply in the other chat")
        assert app.controllers["remote"].status().state is ConnectionState.ONLINE
        assert any("larger than the frame limit" in r.getMessage() for r in caplog.records)
    finally:
        await app.close()
        await remote.stop()
