"""End to end: every reply ends in a state a person understands (complete, stopped,
interrupted, failed) on screen and in the store, with its words kept and a Retry."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from desktop.core.chats.reply_state import state_text
from desktop.core.models import ChatMessage, ConnectionState, Role
from desktop.ui.theme import LIGHT, ThemeManager, ThemeMode
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.e2e_support import App, until, use_fake_provider

pytestmark = pytest.mark.slow

LONG = " ".join(f"word{i}" for i in range(400))
# What no cause shown to a person may look like: an exception class name.
CLASS_NAME = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)*(?:Error|Exception)\b")


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(LONG, chunk_size=6, chunk_delay=0.02) as fake:
        yield fake


async def _shoot(app: App, name: str) -> None:
    """With HERMES_QT_SHOTS=DIR, save the real window as it is now, light and dark, to
    DIR/reply-NAME-{light,dark}.png (how docs/screenshots are made)."""
    target = os.environ.get("HERMES_QT_SHOTS")
    if not target:
        return
    qapp = QApplication.instance()
    assert isinstance(qapp, QApplication)
    win = app.window
    style, palette = qapp.styleSheet(), qapp.palette()
    theme = ThemeManager(qapp, ThemeMode.LIGHT)
    try:
        for mode in (ThemeMode.LIGHT, ThemeMode.DARK):
            theme.set_mode(mode)
            win.set_colors(theme.colors)
            win.chat_view.chat_model.flush()
            for _ in range(20):
                await asyncio.sleep(0)  # Qt restyles and lays out between loop turns
            win.grab().save(str(Path(target) / f"reply-{name}-{mode.value}.png"))
    finally:
        # The app-wide style goes back: the rest of the test (and the next) runs as before.
        qapp.setStyleSheet(style)
        qapp.setPalette(palette)
        win.set_colors(LIGHT)
        theme.deleteLater()


def _reply(app: App) -> ChatMessage:
    [reply] = app.bubbles(Role.ASSISTANT)
    return reply


def _zones(app: App, msg: ChatMessage) -> list[str]:
    view = app.window.chat_view
    row = view.chat_model.row_of(msg.id)
    assert row is not None
    return [z.kind for z in view.bubbles.layout_for(view.chat_model.index(row)).zones]


def _waiting(app: App, msg: ChatMessage) -> bool:
    """Whether the reply's bubble says it waits for the connection (its note line)."""
    view = app.window.chat_view
    row = view.chat_model.row_of(msg.id)
    assert row is not None
    return bool(view.bubbles.layout_for(view.chat_model.index(row)).waiting)


def _menu(app: App, msg: ChatMessage) -> list[str]:
    view = app.window.chat_view
    row = view.chat_model.row_of(msg.id)
    assert row is not None
    menu = view.message_menu(row)
    try:
        return [a.text() for a in menu.actions() if not a.isSeparator()]
    finally:
        menu.deleteLater()


def _stored(app: App) -> list[tuple[str, str, str]]:
    key = app.window.session_key
    assert key
    rows = app.core.store.messages(app.embedded.profile_id, key)
    return [(r.role, r.status, str(r.extra.get("cause", ""))) for r in rows]


async def test_gateway_killed_mid_reply_marks_it_interrupted_with_every_shown_word(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    use_fake_provider(tmp_path, provider.base_url)
    app = App.open(tmp_path, qtbot)
    ctl = app.embedded
    launcher = app.gateway_child
    try:
        await app.wait_online()
        app.type_and_send(qtbot, "Write a long essay")
        # Past the gateway's first partial save (1 s), so its copy is a shorter beginning.
        await until(lambda: "word60" in "".join(m.text for m in app.bubbles(Role.ASSISTANT)), "")
        pid = launcher.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        shown = _reply(app).text
        await until(lambda: ctl.status().state is not ConnectionState.ONLINE, "drop noticed", 5)
        # Meanwhile the reply says, under its words, that the rest waits for the connection.
        await until(lambda: _waiting(app, _reply(app)), "the reply says it waits", 5)
        await until(lambda: launcher.pid not in (None, pid), "the child restarted")
        await app.wait_online()
        await until(lambda: not _reply(app).streaming, "the cut reply ended")
        reply = _reply(app)
        assert not _waiting(app, reply), "still says it waits, back online and ended"
        assert reply.status == "interrupted", reply
        assert reply.text.startswith(shown), "every word that was shown is still there"
        assert state_text(reply).startswith("Interrupted: the gateway went away")
        assert "retry_reply" in _zones(app, reply), "Retry on the bubble itself"
        assert "Retry" in _menu(app, reply), "and in its menu"
        await until(lambda: ("assistant", "interrupted") in [r[:2] for r in _stored(app)], "kept")
        await _shoot(app, "interrupted")
    finally:
        await app.close()
    # After a restart of the app the reply still reads interrupted, with all its words.
    again = App.open(tmp_path, qtbot)
    try:
        await again.wait_online()
        again.window.open_session(app.window.session_key)
        await until(lambda: len(again.bubbles(Role.ASSISTANT)) == 1, "the chat shown again")
        await until(lambda: _reply(again).status == "interrupted", "still interrupted")
        assert _reply(again).text.startswith(shown)
    finally:
        await again.close()


async def test_provider_down_is_one_failed_reply_with_the_cause_in_words(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    # Bound, never listening: connecting is refused, and no other server can take the port.
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    use_fake_provider(tmp_path, f"http://127.0.0.1:{closed.getsockname()[1]}/v1")
    app = App.open(tmp_path, qtbot)
    try:
        await app.wait_online()
        app.type_and_send(qtbot, "hello?")
        await until(
            lambda: any(m.status == "error" for m in app.bubbles(Role.ASSISTANT)), "it failed"
        )
        composer = app.window.composer
        await until(lambda: not composer.stop_button.isVisibleTo(app.window), "turn over")
        replies = app.bubbles(Role.ASSISTANT)
        assert len(replies) == 1, replies
        assert not app.bubbles(Role.SYSTEM), "no separate notice for the same failure"
        reply = replies[0]
        line = state_text(reply)
        assert line.startswith("Failed: cannot reach 127.0.0.1"), line
        assert not CLASS_NAME.search(line), line
        assert "retry_reply" in _zones(app, reply)
        items = _menu(app, reply)
        assert "Copy" not in items, "nothing to copy in a bubble without words"
        assert "Retry" in items and "Regenerate reply" in items
        await until(lambda: ("assistant", "error") in [r[:2] for r in _stored(app)], "stored")
        assert any("cannot reach" in r[2] for r in _stored(app)), "the cause is stored too"
        await _shoot(app, "failed")
    finally:
        await app.close()
        closed.close()


async def test_stop_reads_stopped_by_you(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    use_fake_provider(tmp_path, provider.base_url)
    app = App.open(tmp_path, qtbot)
    try:
        await app.wait_online()
        app.type_and_send(qtbot, "Write a long essay")
        await until(lambda: any(m.text for m in app.bubbles(Role.ASSISTANT)), "streaming")
        qtbot.keyClick(app.window.composer.edit, Qt.Key.Key_Escape)
        await until(lambda: not _reply(app).streaming, "the turn ended")
        reply = _reply(app)
        assert reply.status == "stopped" and state_text(reply) == "Stopped by you"
        assert "retry_reply" in _zones(app, reply)
        await until(lambda: ("assistant", "stopped") in [r[:2] for r in _stored(app)], "stored")
        await _shoot(app, "stopped")
    finally:
        await app.close()


def _click_retry(app: App, qtbot: Any, msg: ChatMessage) -> None:
    view = app.window.chat_view
    row = view.chat_model.row_of(msg.id)
    assert row is not None
    index = view.chat_model.index(row)
    view.scrollTo(index)
    at = view.bubbles.zone_center(index, "retry_reply")
    assert at is not None, "the bubble shows a Retry button"
    point = (at + view.visualRect(index).topLeft().toPointF()).toPoint()
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)


async def test_retry_sends_the_prompt_again_as_the_same_turn(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    with FakeOpenAIServer("Now it works.") as provider:
        provider.status = 401
        use_fake_provider(tmp_path, provider.base_url)
        app = App.open(tmp_path, qtbot)
        try:
            await app.wait_online()
            app.type_and_send(qtbot, "hello?")
            await until(lambda: _replies_of(app, "error"), "it failed")
            assert state_text(_reply(app)) == "Failed: fake refused the API key (HTTP 401)"
            provider.clear_faults()
            _click_retry(app, qtbot, _reply(app))
            await until(lambda: _replies_of(app, "complete"), "the retried reply")
            assert [m.text for m in app.bubbles(Role.USER)] == ["hello?"], "one prompt"
            assert [m.text for m in app.bubbles(Role.ASSISTANT)] == ["Now it works."]
            assert len(provider.requests) == 2
            # The provider saw the prompt once in the retried request, not twice.
            sent = [m["content"] for m in provider.requests[-1]["messages"] if m["role"] == "user"]
            assert sent == ["hello?"]
            await until(
                lambda: (
                    [r[:2] for r in _stored(app)]
                    == [("user", "complete"), ("assistant", "complete")]
                ),
                "the store holds one prompt and its reply",
            )
            await _shoot(app, "complete")
            key = app.window.session_key
        finally:
            await app.close()
        # The gateway's history says the same after a restart.
        again = App.open(tmp_path, qtbot)
        try:
            await again.wait_online()
            again.window.open_session(key)
            await until(lambda: len(again.bubbles(Role.ASSISTANT)) == 1, "the chat shown again")
            assert [m.text for m in again.bubbles(Role.USER)] == ["hello?"]
            assert again.bubbles(Role.ASSISTANT)[0].status == "complete"
        finally:
            await again.close()


def _replies_of(app: App, status: str) -> bool:
    replies = app.bubbles(Role.ASSISTANT)
    return len(replies) == 1 and not replies[0].streaming and replies[0].status == status


async def test_app_gone_mid_reply_says_so_after_the_restart_with_its_words(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    use_fake_provider(tmp_path, provider.base_url)
    app = App.open(tmp_path, qtbot)
    try:
        await app.wait_online()
        app.type_and_send(qtbot, "Write a long essay")
        await until(lambda: "word60" in "".join(m.text for m in app.bubbles(Role.ASSISTANT)), "")
        key = app.window.session_key
        assert _reply(app).streaming
    finally:
        await app.close()  # the app quits while the reply still streams
    again = App.open(tmp_path, qtbot)
    try:
        again.window.open_session(key)
        await until(lambda: len(again.bubbles(Role.ASSISTANT)) == 1, "the cached chat")
        reply = _reply(again)
        assert (reply.status, state_text(reply)) == (
            "interrupted",
            "Interrupted: the app closed before the reply finished",
        )
        assert "word60" in reply.text
        await again.wait_online()
        router = again.embedded._router  # the snapshot of this epoch is in (no public hook)
        await until(lambda: router.synced_epoch == again.embedded._sup.epoch, "synced")
        reply = _reply(again)
        assert not reply.streaming and reply.status == "interrupted"
        assert state_text(reply) == "Interrupted: the app closed before the reply finished"
        assert "word60" in reply.text
    finally:
        await again.close()
