"""End to end, issue #24's "Done when" as one person's session in the real app (embedded
gateway child, FakeOpenAIServer): a file sent with a prompt, that reply regenerated twice,
a prompt sent with the provider refusing, a reply cut by killing the gateway, then a restart.
After it they see: one prompt with three reply versions and its file opening on a click; one
failed reply with its cause in words and a Retry; the cut reply marked interrupted with every
word it showed and a Retry; the model in the header and in each footer."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtTest import QTest

from desktop.core.chats.reply_state import state_text
from desktop.core.models import ChatMessage, ConnectionState, Role
from desktop.ui.chat.version_switch import version_count
from desktop.ui.render.usage import footer_text
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.e2e_support import App, until, use_fake_provider
from tests.ui.test_e2e_attachments import _click_zone
from tests.ui.test_e2e_reply_states import CLASS_NAME, LONG, _zones

pytestmark = pytest.mark.slow

PROMPTS = ["Tell me a fact", "Are you there?", "Write a long essay"]
MODEL = "fake-model · fake"


def _header(app: App) -> str:
    label = app.window.model_label
    return label.text() if label.isVisible() else ""


def _replies(app: App) -> list[ChatMessage]:
    return app.bubbles(Role.ASSISTANT)


def _last_reply_is(app: App, text: str) -> bool:
    replies = _replies(app)
    return bool(replies) and not replies[-1].streaming and replies[-1].text == text


def _regenerate(app: App, reply: ChatMessage) -> None:
    view = app.window.chat_view
    row = view.chat_model.row_of(reply.id)
    assert row is not None
    view.setFocus()
    view.setCurrentIndex(view.chat_model.index(row))
    QTest.keySequence(view, "Ctrl+Shift+R")


def _check(app: App, shown: str) -> None:
    """What the person sees of the three turns."""
    assert [m.text for m in app.bubbles(Role.USER)] == PROMPTS, "each prompt once"
    assert not app.bubbles(Role.SYSTEM), "no separate notice for the failure"
    fact, failed, cut = _replies(app)
    assert (fact.text, version_count(fact)) == ("Third answer.", (3, 3))
    assert footer_text(fact).startswith("fake-model · "), "the footer names the model"
    assert [a.filename for a in app.bubbles(Role.USER)[0].attachments] == ["notes.txt"]
    line = state_text(failed)
    assert failed.status == "error" and line.startswith("Failed: "), line
    assert "refused" in line and not CLASS_NAME.search(line), line
    assert "retry_reply" in _zones(app, failed), "Retry on the failed bubble"
    assert cut.status == "interrupted" and cut.text.startswith(shown), "every word shown"
    assert state_text(cut).startswith("Interrupted: the gateway went away")
    assert "retry_reply" in _zones(app, cut), "Retry on the cut bubble"
    assert _header(app) == MODEL, "the header names the model the next reply uses"


async def test_the_person_of_done_when_sees_every_state_after_the_restart(
    qloop: Any, qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("quokkas smile\n", "utf-8")
    with FakeOpenAIServer("First answer.") as provider:
        use_fake_provider(tmp_path, provider.base_url)
        app = App.open(tmp_path, qtbot)
        launcher = app.gateway_child
        try:
            await app.wait_online()
            composer = app.window.composer
            composer.attach_files([str(notes)])
            await until(lambda: len(composer.attachments) == 1, "the chip")
            app.type_and_send(qtbot, PROMPTS[0])
            await until(lambda: _last_reply_is(app, "First answer."), "the first reply")
            for text in ("Second answer.", "Third answer."):
                provider.set_reply(text)
                _regenerate(app, _replies(app)[-1])
                await until(lambda t=text: _last_reply_is(app, t), f"the reply {text!r}")
            await until(lambda: _header(app) == MODEL, "the header names the model")

            provider.status = 401  # the provider refuses the key
            app.type_and_send(qtbot, PROMPTS[1])
            await until(
                lambda: len(_replies(app)) == 2 and _replies(app)[-1].status == "error", "failed"
            )
            await until(lambda: not composer.stop_button.isVisibleTo(app.window), "turn over")
            provider.clear_faults()

            provider.set_reply(LONG, chunk_delay=0.02)
            provider.chunk_size = 6
            app.type_and_send(qtbot, PROMPTS[2])
            await until(lambda: "word60" in (_replies(app)[-1].text if _replies(app) else ""), "")
            pid = launcher.pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            shown = _replies(app)[-1].text
            ctl = app.embedded
            await until(lambda: ctl.status().state is not ConnectionState.ONLINE, "drop", 5)
            await until(lambda: launcher.pid not in (None, pid), "the child restarted")
            await app.wait_online()
            await until(lambda: not _replies(app)[-1].streaming, "the cut reply ended")
            _check(app, shown)
            key = app.window.session_key
            assert key is not None
        finally:
            await app.close()

        opened: list[QUrl] = []
        monkeypatch.setattr(
            QDesktopServices, "openUrl", staticmethod(lambda url: opened.append(url) or True)
        )
        again = App.open(tmp_path, qtbot)
        try:
            await again.wait_online()
            again.window.open_session(key)
            await until(
                lambda: (
                    len(_replies(again)) == 3
                    and version_count(_replies(again)[0]) == (3, 3)
                    and _replies(again)[-1].status == "interrupted"
                    and bool(again.bubbles(Role.USER)[0].attachments)
                ),
                "the chat shown again",
            )
            await until(lambda: _header(again) == MODEL, "the header after the restart")
            _check(again, shown)
            _click_zone(again, again.bubbles(Role.USER)[0], 0)
            assert len(opened) == 1, "a click on the file opens it"
            kept = Path(opened[0].toLocalFile())
            assert kept.is_relative_to(again.paths.data), "the app's own copy opens"
            assert kept.read_bytes() == b"quokkas smile\n"  # noqa: ASYNC240
        finally:
            await again.close()
