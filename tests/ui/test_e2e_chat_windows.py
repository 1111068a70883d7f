"""End to end, on the embedded gateway and real Hermes lines (0.19.0, 0.20.1, 0.22.2): a chat in
a window of its own is being read, and moves there with everything typed for it.

Three chats of one profile: A, C and B in tabs. A moves to a window (Ctrl+Shift+Enter in the
list) with its draft and cursor; the main window goes on to B. A's reply arrives in its window
and marks nothing unread; C's, in a background tab, gets its unread badge. A chosen again in the
list brings its window up (no second message box for it); what is typed there is saved and
comes back in its window after a restart.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from desktop.app.assembly import EMBEDDED_PROFILE_ID, AppPaths
from desktop.core.keys import draft_key, is_temp_key
from desktop.core.link.profiles import FileTokenStore, Profile, ProfileKind
from desktop.core.profile.controller import ProfileController
from desktop.ui.window.popout import ChatWindow
from desktop.ui.window.tabs import ChatRef
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.hermes_env import HERMES_019, HERMES_0201, HERMES_022, hermes_gateway
from tests.support.hermes_env import require_hermes as _require
from tests.ui.e2e_support import App, add_profiles, until, use_fake_provider
from tests.ui.settings_support import keep_loop  # noqa: F401 (fixture)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.usefixtures("keep_loop"),
    pytest.mark.timeout(400),
]

CTRL = Qt.KeyboardModifier.ControlModifier
SHIFT = Qt.KeyboardModifier.ShiftModifier
REPLY_A = "Quokkas live on Rottnest Island and look happy."
REPLY_C = "Wombats have cube-shaped droppings."
DRAFT = "and what do they eat"
PID = "h"


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer("ok", chunk_size=8, chunk_delay=0.01) as fake:
        yield fake


@contextlib.asynccontextmanager
async def _gateway(
    line: str, tmp_path: Path, provider: FakeOpenAIServer
) -> AsyncIterator[tuple[Path, str, float]]:
    """The app's data root, its profile's id and how long to wait, on the gateway `line`."""
    root = tmp_path / "app"
    if line == "embedded":
        use_fake_provider(root, provider.base_url)
        yield root, EMBEDDED_PROFILE_ID, 30.0
        return
    dist = {"0.19.0": HERMES_019, "0.20.1": HERMES_0201, "0.22.2": HERMES_022}[line]
    _require(dist)
    async with hermes_gateway(tmp_path / "home", provider.base_url, dist) as gw:
        ref = f"profile:{PID}:1"
        FileTokenStore(AppPaths.create(str(root)).config / "tokens.json").set(ref, gw.token)
        profile = Profile(PID, f"Hermes {line}", ProfileKind.REMOTE, url=gw.url, token_ref=ref)
        add_profiles(root, [profile])
        yield root, PID, 180.0  # hermes serve imports a large agent on first start


def _keys(app: App, key: Qt.Key) -> None:
    QTest.keyClick(app.window.composer.edit, key, CTRL)


def _streamed(provider: FakeOpenAIServer) -> int:
    return len([r for r in provider.requests if r.get("stream")])


def _window_replies(window: ChatWindow) -> str:
    model = window.chat_view.chat_model
    model.flush()
    rows = [model.message_at(r) for r in range(model.rowCount())]
    return " ".join(m.text for m in rows if m.role.value == "assistant" and not m.streaming)


def _running(ctl: ProfileController, key: str) -> bool:
    summary = ctl.summary(key)
    return bool(summary and summary.running)


async def _new_chat_answered(app: App, ctl: ProfileController, text: str, wait: float) -> str:
    """`text` sent in the chat on screen; its key once the gateway made it and answered."""
    edit = app.window.composer.edit
    edit.setFocus()
    QTest.keyClicks(edit, text)
    QTest.keyClick(edit, Qt.Key.Key_Return)
    await until(
        lambda: (k := app.window.session_key) is not None and not is_temp_key(k),
        "the chat made on the gateway",
        wait,
    )
    key = app.window.session_key
    assert key is not None
    await until(
        lambda: len(app.finished_replies()) == 1 and not _running(ctl, key), "its reply", wait
    )
    return key


def _saved_draft(app: App, pid: str, key: str) -> str:
    record = app.core.store.draft(draft_key(pid, key))
    return record.text if record is not None else ""


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("embedded", id="embedded"),
        pytest.param("0.19.0", id="0.19.0", marks=pytest.mark.hermes),
        pytest.param("0.20.1", id="0.20.1", marks=pytest.mark.hermes),
        pytest.param("0.22.2", id="0.22.2", marks=pytest.mark.hermes),
    ],
)
@pytest.mark.qt_log_ignore("does not support raise", "propagateSizeHints")  # offscreen
async def test_a_chat_in_its_own_window_is_read_there_and_keeps_its_draft(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer, line: str
) -> None:
    async with _gateway(line, tmp_path, provider) as (root, pid, wait):
        app = App.open(root, qtbot)
        win = app.window
        ctl = app.controllers[pid]
        try:
            win.activateWindow()
            win.switch_profile(pid)
            await until(ctl.is_online, "online", wait)
            # Three chats of the profile, each in a tab: A, C, B (B in front).
            key_a = await _new_chat_answered(app, ctl, "Tell me about quokkas.", wait)
            _keys(app, Qt.Key.Key_T)
            key_c = await _new_chat_answered(app, ctl, "And wombats?", wait)
            _keys(app, Qt.Key.Key_T)
            key_b = await _new_chat_answered(app, ctl, "And echidnas?", wait)
            assert win.tabs.chats() == [ChatRef(pid, k) for k in (key_a, key_c, key_b)]
            gate = threading.Event()  # both replies held until A is in its window
            provider.script = [
                {"content": REPLY_C, "gate": gate},
                {"content": REPLY_A, "gate": gate},
            ]
            asked = _streamed(provider)
            _keys(app, Qt.Key.Key_2)
            app.type_and_send(qtbot, "Once more about wombats.")
            await until(lambda: _streamed(provider) == asked + 1, "C asked the model", wait)
            _keys(app, Qt.Key.Key_1)
            assert win.session_key == key_a
            app.type_and_send(qtbot, "Once more about quokkas.")
            await until(lambda: _streamed(provider) == asked + 2, "A asked the model", wait)
            # A draft for A's next message, the cursor moved back into it; then Ctrl+Shift+Enter.
            edit = win.composer.edit
            QTest.keyClicks(edit, DRAFT)
            for _ in range(4):
                QTest.keyClick(edit, Qt.Key.Key_Left)
            win.session_list.setFocus()
            QTest.keyClick(win.session_list, Qt.Key.Key_Return, CTRL | SHIFT)
            [window] = win.popouts.windows
            assert window.session_key == key_a
            assert window.composer.edit.toPlainText() == DRAFT
            assert window.composer.edit.textCursor().position() == len(DRAFT) - 4
            assert win.tabs.chats() == [ChatRef(pid, key_c), ChatRef(pid, key_b)]
            # The main window goes on to B, another chat of the same profile.
            _keys(app, Qt.Key.Key_2)
            assert win.session_key == key_b
            # A chosen again in the list: its window comes up; no second message box for it.
            win.session_list.setFocus()
            win.sidebar.select(key_a)
            QTest.keyClick(win.session_list, Qt.Key.Key_Return)
            assert win.session_key == key_b and win.popouts.windows == [window]
            assert ChatRef(pid, key_a) not in win.tabs.chats()
            QTest.keyClicks(window.composer.edit, "ing ")
            typed = DRAFT[:-4] + "ing " + DRAFT[-4:]
            assert window.composer.edit.toPlainText() == typed
            gate.set()
            await until(lambda: REPLY_A in _window_replies(window), "A's reply in its window", wait)
            await until(
                lambda: not _running(ctl, key_a) and not _running(ctl, key_c),
                "both replies finished",
                wait,
            )
            # C, in a background tab, has its unread badge; A, read in its window, none.
            await until(lambda: "1 unread" in win.tabs.bar.tabToolTip(0), "C unread", wait)
            assert win.tabs.bar.tabText(0).endswith("(1)")
            summary_a = ctl.summary(key_a)
            assert summary_a is not None and summary_a.unread == 0
            assert win.windowTitle() == "Hermes (1)" and app.window.tray.unread == 1
            # What was typed in the window reached the store: a crash from here keeps it.
            await until(lambda: _saved_draft(app, pid, key_a) == typed, "the draft saved", wait)
        finally:
            await app.close()

        again = App.open(root, qtbot)
        try:
            await until(again.controllers[pid].is_online, "online again", wait)
            [back] = again.window.popouts.windows
            assert back.session_key == key_a
            assert back.composer.edit.toPlainText() == typed
            assert ChatRef(pid, key_a) not in again.window.tabs.chats()
            await until(lambda: REPLY_A in _window_replies(back), "A's chat in its window", wait)
        finally:
            await again.close()
