"""End to end: Regenerate replaces the reply in place and keeps the earlier ones as versions
(< n/m > on the bubble), on screen, in the gateway's history, in the store, after a restart
and in the export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from desktop.core.disk.export import conversation_markdown
from desktop.core.models import ChatMessage, Role
from desktop.ui.chat.version_switch import version_count
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.e2e_support import App, until, use_fake_provider
from tests.ui.test_e2e_reply_states import _shoot

pytestmark = pytest.mark.slow


def _reply(app: App) -> ChatMessage:
    [reply] = app.bubbles(Role.ASSISTANT)
    return reply


def _done(app: App, text: str) -> bool:
    """The one reply reads `text`, finished, and the message box says so (Stop gone: it follows
    the chat a frame later)."""
    replies = app.bubbles(Role.ASSISTANT)
    finished = len(replies) == 1 and not replies[0].streaming and replies[0].text == text
    return finished and not app.window.composer.stop_button.isVisibleTo(app.window)


def _on_reply(app: App) -> None:
    view = app.window.chat_view
    row = view.chat_model.row_of(_reply(app).id)
    assert row is not None
    view.setFocus()
    view.setCurrentIndex(view.chat_model.index(row))


def _click_version(app: App, qtbot: Any, step: int) -> None:
    view = app.window.chat_view
    row = view.chat_model.row_of(_reply(app).id)
    assert row is not None
    index = view.chat_model.index(row)
    view.scrollTo(index)
    at = view.bubbles.zone_center(index, "version", step)
    assert at is not None, "the bubble shows < n/m >"
    point = (at + view.visualRect(index).topLeft().toPointF()).toPoint()
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)


def _accessible(app: App) -> str:
    view = app.window.chat_view
    row = view.chat_model.row_of(_reply(app).id)
    assert row is not None
    return str(view.chat_model.index(row).data(Qt.ItemDataRole.AccessibleTextRole))


def _exported(app: App, key: str, folder: Path) -> Any:
    """The chat as the user exports it to JSON (a reply that just ended included)."""
    path = folder / "export.json"
    app.embedded.export_session(key, str(path))
    return json.loads(path.read_text(encoding="utf-8"))


async def _history(app: App) -> list[tuple[str, str]]:
    key = app.window.session_key
    assert key is not None
    runtime = app.embedded._router.runtime_id(key)
    result = await app.embedded._sup.call("session.history", {"session_id": runtime})
    return [(m["role"], m.get("text") or m.get("content") or "") for m in result["messages"]]


async def test_regenerate_twice_keeps_three_versions_of_one_prompt(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    with FakeOpenAIServer("First answer.") as provider:
        use_fake_provider(tmp_path, provider.base_url)
        app = App.open(tmp_path, qtbot)
        try:
            await app.wait_online()
            app.type_and_send(qtbot, "Tell me a fact")
            await until(lambda: _done(app, "First answer."), "the first reply")
            for text in ("Second answer.", "Third answer."):
                provider.set_reply(text)
                _on_reply(app)
                QTest.keySequence(app.window.chat_view, "Ctrl+Shift+R")
                await until(lambda t=text: _done(app, t), f"the reply {text!r}")
            assert [m.text for m in app.bubbles(Role.USER)] == ["Tell me a fact"], "one prompt"
            assert version_count(_reply(app)) == (3, 3)
            assert _accessible(app).endswith(". Version 3 of 3")
            # The gateway's history holds the prompt once, with the reply shown.
            history = await _history(app)
            assert [r for r, _ in history] == ["user", "assistant"]
            assert history[1][1] == "Third answer."
            # Switching shows each version, by click and by keyboard.
            _click_version(app, qtbot, -1)
            await until(lambda: _reply(app).text == "Second answer.", "version 2")
            assert _accessible(app).endswith(". Version 2 of 3")
            await _shoot(app, "version-2-of-3")
            _on_reply(app)
            QTest.keySequence(app.window.chat_view, "Alt+Left")
            await until(lambda: _reply(app).text == "First answer.", "version 1")
            assert version_count(_reply(app)) == (1, 3)
            _click_version(app, qtbot, 1)
            _click_version(app, qtbot, 1)
            await until(lambda: _reply(app).text == "Third answer.", "back at version 3")
            key = app.window.session_key
            assert key is not None
            exported = _exported(app, key, tmp_path)
            [answer] = [m for m in exported["messages"] if m["role"] == "assistant"]
            assert answer["text"] == "Third answer."
            assert [v["text"] for v in answer["versions"]] == ["First answer.", "Second answer."]
            markdown = conversation_markdown(app.core.store, app.embedded.profile_id, key)
            assert "Third answer." in markdown and "Version 3 of 3" in markdown
            json.dumps(exported)
        finally:
            await app.close()
        # After a restart the gateway's rows hold the newest reply; the versions come back.
        again = App.open(tmp_path, qtbot)
        try:
            await again.wait_online()
            again.window.open_session(key)
            await until(lambda: _done(again, "Third answer."), "the chat shown again")
            await until(lambda: version_count(_reply(again)) == (3, 3), "its three versions")
            assert [m.text for m in again.bubbles(Role.USER)] == ["Tell me a fact"]
            _click_version(again, qtbot, -1)
            await until(lambda: _reply(again).text == "Second answer.", "version 2 again")
        finally:
            await again.close()


def _prompt(app: App) -> ChatMessage:
    [prompt] = app.bubbles(Role.USER)
    return prompt


async def test_edit_and_resend_replaces_the_prompt_and_its_reply_keeping_the_pair(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    with FakeOpenAIServer("First answer.") as provider:
        use_fake_provider(tmp_path, provider.base_url)
        app = App.open(tmp_path, qtbot)
        try:
            await app.wait_online()
            app.type_and_send(qtbot, "Tell me a fact")
            await until(lambda: _done(app, "First answer."), "the first reply")
            view, composer = app.window.chat_view, app.window.composer
            # Edit and resend (Ctrl+Shift+E on the prompt): the message box holds it, and
            # says what sending it will do; Esc leaves it as it was.
            row = view.chat_model.row_of(_prompt(app).id)
            assert row is not None
            view.setFocus()
            view.setCurrentIndex(view.chat_model.index(row))
            QTest.keySequence(view, "Ctrl+Shift+E")
            assert composer.edit.toPlainText() == "Tell me a fact"
            assert composer.edit_bar.isVisibleTo(app.window)
            assert "replaces it and its reply" in composer.edit_label.text()
            qtbot.keyClick(composer.edit, Qt.Key.Key_Escape)
            assert composer.edit.toPlainText() == "" and not composer.edit_bar.isVisibleTo(
                app.window
            )
            view.setFocus()
            QTest.keySequence(view, "Ctrl+Shift+E")
            provider.set_reply("Second answer.")
            composer.edit.selectAll()
            qtbot.keyClicks(composer.edit, "Tell me another fact")
            await _shoot(app, "editing-sent-prompt")
            qtbot.keyClick(composer.edit, Qt.Key.Key_Return)
            await until(lambda: _done(app, "Second answer."), "the reply to the edited prompt")
            await until(
                lambda: [m.text for m in app.bubbles(Role.USER)] == ["Tell me another fact"],
                "one prompt, the edited one",
            )
            assert version_count(_reply(app)) == (2, 2)
            # The gateway's history holds the edited pair only; the model got the edit alone.
            assert await _history(app) == [
                ("user", "Tell me another fact"),
                ("assistant", "Second answer."),
            ]
            sent = [m["content"] for m in provider.requests[-1]["messages"] if m["role"] == "user"]
            assert sent == ["Tell me another fact"], sent
            # Version 1 is the earlier pair: the prompt above the reply reads as it was.
            _click_version(app, qtbot, -1)
            await until(lambda: _reply(app).text == "First answer.", "version 1")
            assert _prompt(app).text == "Tell me a fact"
            await _shoot(app, "edited-prompt-version-1-of-2")
            _click_version(app, qtbot, 1)
            await until(lambda: _reply(app).text == "Second answer.", "version 2")
            assert _prompt(app).text == "Tell me another fact"
            key = app.window.session_key
            assert key is not None
            exported = _exported(app, key, tmp_path)
            assert [m["text"] for m in exported["messages"] if m["role"] == "user"] == [
                "Tell me another fact"
            ]
            [answer] = [m for m in exported["messages"] if m["role"] == "assistant"]
            assert [(v["prompt"], v["text"]) for v in answer["versions"]] == [
                ("Tell me a fact", "First answer.")
            ]
        finally:
            await app.close()
        again = App.open(tmp_path, qtbot)
        try:
            await again.wait_online()
            again.window.open_session(key)
            await until(lambda: _done(again, "Second answer."), "the chat shown again")
            await until(lambda: version_count(_reply(again)) == (2, 2), "its two versions")
            assert [m.text for m in again.bubbles(Role.USER)] == ["Tell me another fact"]
            _click_version(again, qtbot, -1)
            await until(lambda: _prompt(again).text == "Tell me a fact", "the earlier prompt")
        finally:
            await again.close()
