"""End to end: a link that drops mid-reply, a gateway child that dies, and shutting down."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from desktop.core.models import ConnectionState, Role
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.e2e_support import App, until, use_fake_provider

pytestmark = pytest.mark.slow

REPLY = " ".join(f"token{i}" for i in range(120)) + " THE END."


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(REPLY, chunk_size=10, chunk_delay=0.015) as fake:
        yield fake


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_socket_dropped_mid_reply_reconnects_and_completes_once(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    use_fake_provider(tmp_path, provider.base_url)
    app = App.open(tmp_path, qtbot)
    ctl = app.embedded
    try:
        await app.wait_online()
        epoch = ctl.diagnostics().epoch
        app.type_and_send(qtbot, "Stream me something long")
        await until(
            lambda: any(m.streaming and len(m.text) > 40 for m in app.bubbles(Role.ASSISTANT)),
            "the reply is streaming",
        )
        app.sockets.drop_newest()
        await until(lambda: ctl.diagnostics().epoch > epoch, "a new connection attempt")
        await app.wait_online()
        await until(lambda: len(app.finished_replies()) == 1, "the reply finished", 30)
        replies = app.bubbles(Role.ASSISTANT)
        assert len(replies) == 1, "one reply bubble, not a second one after the reconnect"
        assert replies[0].text == REPLY and replies[0].status == "complete"
        assert replies[0].text.count("THE END.") == 1
        await until(lambda: app.user_confirmed("Stream me something long"), "prompt confirmed")
        assert len(app.bubbles(Role.USER)) == 1, "no duplicated user bubble"
        assert len(provider.requests) == 1, "the prompt ran exactly once"
    finally:
        await app.close()


async def test_gateway_child_killed_mid_reply_is_restarted_and_prompt_not_lost(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    use_fake_provider(tmp_path, provider.base_url)
    app = App.open(tmp_path, qtbot)
    ctl = app.embedded
    launcher = app.gateway_child
    try:
        await app.wait_online()
        app.type_and_send(qtbot, "first question")
        await until(lambda: len(app.finished_replies()) == 1, "first reply")
        first_pid = launcher.pid
        provider.set_reply("second answer, after the crash")
        os.kill(first_pid, signal.SIGKILL)
        await until(lambda: ctl.status().state is not ConnectionState.ONLINE, "drop noticed", 5)
        await until(lambda: launcher.pid not in (None, first_pid), "the child restarted")
        await app.wait_online()
        app.type_and_send(qtbot, "second question")
        await until(lambda: len(app.finished_replies()) == 2, "second reply")
        texts = [m.text for m in app.finished_replies()]
        assert texts == [REPLY, "second answer, after the crash"]
        assert [m.text for m in app.bubbles(Role.USER)] == ["first question", "second question"]
        assert not _alive(first_pid)
    finally:
        await app.close()


async def test_idle_app_runs_no_qt_timers_and_closing_stops_the_gateway(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    use_fake_provider(tmp_path, provider.base_url)
    app = App.open(tmp_path, qtbot)
    try:
        await app.wait_online()
        app.type_and_send(qtbot, "hello")
        await until(lambda: len(app.finished_replies()) == 1, "reply")
        await until(lambda: app.user_confirmed("hello"), "prompt confirmed")
        app.window.chat_view.chat_model.flush()
        # Idle and online: the heartbeat lives in asyncio, so no widget timer may tick.
        await until(
            lambda: not [t for t in app.window.findChildren(QTimer) if t.isActive()],
            "no active QTimer in the idle window",
            5,
        )
        pid = app.gateway_child.pid
        assert pid is not None and _alive(pid)
    finally:
        await app.close()
    assert not app.window.isVisible()
    assert not _alive(pid), "closing the app stopped the gateway child"
    assert not app.gateway_child.running
    assert QApplication.instance() is not None
