"""End to end on real Hermes lines (0.19.0, 0.20.1, 0.22.2, 0.21.5): chats in tabs keep going in
the background.

Two chats stream at once, one in a background tab: its reply is whole when its tab is chosen.
An approval asked in a background tab shows on the "running now" strip, and one click there
brings the chat and its card back. The tabs come back when the app starts again. Driven with
the keys a user presses (Ctrl+T, Ctrl+1, Ctrl+2, Ctrl+W).
"""

from __future__ import annotations

import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from desktop.core.keys import is_temp_key
from desktop.core.models import Role
from desktop.core.profile.controller import ProfileController
from desktop.ui.chat.approval import CHOICE_LABELS, ApprovalCard
from desktop.ui.window.tabs import ChatRef
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.hermes_env import (
    HERMES_019,
    HERMES_0201,
    HERMES_0215,
    HERMES_022,
    HermesDist,
    hermes_gateway,
)
from tests.support.hermes_env import require_hermes as _require
from tests.ui.e2e_support import App, until, use_remote_gateway
from tests.ui.settings_support import keep_loop  # noqa: F401 (fixture)

pytestmark = [
    pytest.mark.hermes,
    pytest.mark.slow,
    pytest.mark.usefixtures("keep_loop"),
    pytest.mark.timeout(400),
]

WAIT = 180.0  # hermes serve imports a large agent on first start
CTRL = Qt.KeyboardModifier.ControlModifier
FIRST = "Tell me about quokkas."
SECOND = "And about wombats?"
REPLY_A = "Quokkas live on Rottnest Island and look happy. " * 6
REPLY_B = "Wombats have cube-shaped droppings. " * 6
DONE = "Permissions changed."
PID = "h"


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    # Small slow chunks: each reply streams for a few seconds, long enough to overlap.
    with FakeOpenAIServer("ok", chunk_size=8, chunk_delay=0.03) as fake:
        fake.side_reply = "UNSURE"  # 0.19 smart approvals: neither APPROVE nor DENY -> a card
        yield fake


def _use_gateway(root: Path, url: str, token: str, dist: HermesDist) -> None:
    use_remote_gateway(root, url, token, pid=PID, name=f"Hermes {dist.version}")


def _keys(app: App, key: Qt.Key) -> None:
    """A Ctrl shortcut pressed where the user types."""
    QTest.keyClick(app.window.composer.edit, key, CTRL)


def _running(ctl: ProfileController, key: str) -> bool:
    summary = ctl.summary(key)
    return bool(summary and summary.running)


def _reply_text(app: App) -> str:
    app.window.chat_view.chat_model.flush()
    return " ".join(m.text for m in app.finished_replies())


@pytest.mark.parametrize(
    "dist",
    [
        pytest.param(HERMES_019, id="0.19.0"),
        pytest.param(HERMES_0201, id="0.20.1"),
        pytest.param(HERMES_022, id="0.22.2"),
        pytest.param(HERMES_0215, id="0.21.5"),
    ],
)
async def test_two_chats_stream_at_once_and_a_background_approval_is_on_the_strip(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer, dist: HermesDist
) -> None:
    _require(dist)
    scratch = tmp_path / "scratch.txt"
    scratch.write_text("not shared\n")
    scratch.chmod(0o644)
    gate = threading.Event()  # holds both replies until both chats asked
    provider.script = [
        {"content": REPLY_A, "gate": gate},
        {"content": REPLY_B, "gate": gate},
        {"tool_calls": [("terminal", {"command": f"chmod 777 {scratch}"})]},
        {"content": DONE},
    ]
    root = tmp_path / "app"
    async with hermes_gateway(tmp_path / "home", provider.base_url, dist) as gw:
        _use_gateway(root, gw.url, gw.token, dist)
        app = App.open(root, qtbot)
        win = app.window
        ctl = app.controllers[PID]
        try:
            win.activateWindow()  # (no qtbot.waitActive: a nested loop stalls asyncio's)
            win.switch_profile(PID)
            await until(ctl.is_online, "online", WAIT)
            # Chat A in the first tab; chat B in a new tab (Ctrl+T) while A waits for its reply.
            app.type_and_send(qtbot, FIRST)
            await until(lambda: len(provider.requests) >= 1, "A asked the model", WAIT)
            _keys(app, Qt.Key.Key_T)
            assert win.tabs.bar.count() == 2 and win.tabs.bar.currentIndex() == 1
            app.type_and_send(qtbot, SECOND)
            await until(
                lambda: len([r for r in provider.requests if r.get("stream")]) >= 2,
                "B asked the model too",
                WAIT,
            )
            # Both durable now (the temporary keys of new chats were followed by the tabs).
            await until(
                lambda: not any(is_temp_key(ref.key) for ref in win.tabs.chats()),
                "both chats created on the gateway",
                WAIT,
            )
            key_a, key_b = (ref.key for ref in win.tabs.chats())
            gate.set()
            # Both stream at once: A in the background tab, B on screen.
            await until(
                lambda: (
                    _running(ctl, key_a)
                    and any(m.streaming and m.text for m in app.bubbles(Role.ASSISTANT))
                ),
                "A running while B streams on screen",
                WAIT,
            )
            assert "reply running" in win.tabs.bar.tabToolTip(0)
            assert len(win.tabs.strip.buttons) == 2, "both on the strip"
            await until(
                lambda: not _running(ctl, key_a) and not _running(ctl, key_b),
                "both replies finished",
                WAIT,
            )
            assert REPLY_B.strip() in _reply_text(app)
            await until(lambda: "unread" in win.tabs.bar.tabToolTip(0), "A marked unread", WAIT)
            # Ctrl+1: A's reply is there whole, streamed while its tab was in the background.
            _keys(app, Qt.Key.Key_1)
            assert win.session_key == key_a
            await until(lambda: REPLY_A.strip() in _reply_text(app), "A's whole reply", WAIT)
            assert [m.text for m in app.bubbles(Role.USER)] == [FIRST]
            assert len(app.finished_replies()) == 1
            assert not any(m.streaming for m in app.messages())
            await until(lambda: "unread" not in win.tabs.bar.tabToolTip(0), "A read", WAIT)
            # Read from A's top in a small window; B's tab and back: A still at its top.
            view, bar = win.chat_view, win.chat_view.verticalScrollBar()
            win.resize(420, 360)
            for _ in range(6):
                win.zoom.zoom_in()
            await until(lambda: bar.maximum() > 40, "A taller than the view", 10)
            bar.setValue(10)
            assert not view.at_bottom
            _keys(app, Qt.Key.Key_2)
            assert view.at_bottom, "B's tab was at its bottom"
            _keys(app, Qt.Key.Key_1)
            assert bar.value() == 10 and not view.at_bottom, "A where it was read"
            win.zoom.reset()
            win.resize(1040, 700)

            # Ctrl+2, ask B to change the file; Hermes asks for approval. Ctrl+1 meanwhile.
            _keys(app, Qt.Key.Key_2)
            assert win.session_key == key_b
            app.type_and_send(qtbot, "make the scratch file shared")
            _keys(app, Qt.Key.Key_1)
            assert win.session_key == key_a
            await until(lambda: bool(ctl.pending_requests(key_b)), "B's approval asked", WAIT)
            strip = win.tabs.strip
            # B's running reply already had it on the strip: wait for its question on it.
            await until(
                lambda: (
                    strip.isVisible()
                    and len(strip.buttons) == 1
                    and "a question waiting" in strip.buttons[0].toolTip()
                ),
                "B's question on the strip",
                WAIT,
            )
            assert "a question waiting" in win.tabs.bar.tabToolTip(1)
            assert not win.approvals.isVisible(), "A's pane shows no card of B"
            assert stat.S_IMODE(scratch.stat().st_mode) == 0o644
            # One click on the strip: B, its card under it; approve once.
            strip.buttons[0].click()
            assert win.session_key == key_b and win.tabs.bar.currentIndex() == 1
            cards = win.approvals.findChildren(ApprovalCard)
            assert len(cards) == 1 and win.approvals.isVisible()
            label = CHOICE_LABELS["once"][0]
            [allow] = [b for b in cards[0].buttons if b.text() == label]
            allow.click()
            await until(lambda: DONE in _reply_text(app), "B's turn done after the approval", WAIT)
            assert stat.S_IMODE(scratch.stat().st_mode) == 0o777
            await until(lambda: not strip.isVisible(), "nothing busy: no strip", WAIT)
        finally:
            await app.close()

        # The next start: the same two tabs, B current, its chat shown from the gateway.
        again = App.open(root, qtbot)
        try:
            await until(again.controllers[PID].is_online, "online again", WAIT)
            assert again.window.tabs.chats() == [ChatRef(PID, key_a), ChatRef(PID, key_b)]
            assert again.window.session_key == key_b
            await until(lambda: DONE in _reply_text(again), "B's chat after the restart", WAIT)
        finally:
            await again.close()
