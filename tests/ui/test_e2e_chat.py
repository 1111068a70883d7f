"""End to end: typing, sending, streaming and stopping through the real window, core and gateway."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from desktop.core.models import Role
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.e2e_support import App, until, use_fake_provider

pytestmark = pytest.mark.slow

REPLY = "Here is **the answer**: forty-two, and a `code span` for good measure."


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(REPLY, chunk_size=6) as fake:
        yield fake


async def test_enter_sends_and_the_reply_streams_in_once(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    use_fake_provider(tmp_path, provider.base_url)
    app = App.open(tmp_path, qtbot)
    try:
        await app.wait_online()
        app.type_and_send(qtbot, "What is the answer?")
        assert app.window.composer.edit.toPlainText() == "", "Enter sent and cleared the composer"
        await until(lambda: len(app.finished_replies()) == 1, "the reply finished")
        reply = app.finished_replies()[0]
        assert reply.text == REPLY
        assert reply.status == "complete"
        await until(lambda: app.user_confirmed("What is the answer?"), "prompt confirmed")
        assert [m.role for m in app.messages()] == [Role.USER, Role.ASSISTANT]
        assert len(provider.requests) == 1, "the prompt reached the model exactly once"
        last = provider.requests[0]["messages"][-1]
        assert last["role"] == "user" and "What is the answer?" in str(last["content"])
        await until(lambda: not app.window.composer.stop_button.isVisibleTo(app.window), "idle")
        # The session is listed under a title with a plain-text preview of the last message.
        model = app.window.session_model
        await until(
            lambda: (
                model.rowCount() == 1
                and (s := model.session(app.window.session_key or "")) is not None
                and s.preview.startswith("Here is the answer: forty-two")
            ),
            "session listed with a plain preview",
        )
        summary = model.session(app.window.session_key or "")
        assert summary is not None
        assert summary.title == "What is the answer?"
        assert "*" not in summary.preview and "`" not in summary.preview
        assert not app.window.session_key.startswith("new:"), "the gateway's key replaced the temp"
    finally:
        await app.close()


@pytest.mark.parametrize("how", ["button", "esc"])
async def test_stop_interrupts_the_streaming_turn(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer, how: str
) -> None:
    provider.set_reply(" ".join(f"word{i}" for i in range(400)), chunk_delay=0.02)
    use_fake_provider(tmp_path, provider.base_url)
    app = App.open(tmp_path, qtbot)
    composer = app.window.composer
    try:
        await app.wait_online()
        app.type_and_send(qtbot, "Write a long essay")
        await until(
            lambda: (
                composer.stop_button.isVisibleTo(app.window)
                and any(m.text for m in app.bubbles(Role.ASSISTANT))
            ),
            "streaming started and Stop is shown",
        )
        assert not composer.send_button.isVisibleTo(app.window)
        if how == "button":
            qtbot.mouseClick(composer.stop_button, Qt.MouseButton.LeftButton)
        else:
            qtbot.keyClick(composer.edit, Qt.Key.Key_Escape)
        await until(lambda: len(app.finished_replies()) == 1, "the turn ended")
        reply = app.finished_replies()[0]
        assert reply.status == "stopped", "the user's own stop, not an interruption"
        assert len(reply.text) < len(provider.reply), "stopped before the end"
        await until(lambda: not composer.stop_button.isVisibleTo(app.window), "Stop went away")
        assert composer.send_button.isVisibleTo(app.window)
    finally:
        await app.close()
