"""End to end: drafts that survive a restart; attachments pasted or dropped into the composer."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import (
    QColor,
    QDragEnterEvent,
    QDragMoveEvent,
    QDropEvent,
    QGuiApplication,
    QImage,
)
from PySide6.QtWidgets import QApplication

from desktop.core.models import Role
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.e2e_support import App, until, use_fake_provider

pytestmark = pytest.mark.slow


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer("I see your files.") as fake:
        yield fake


def _saved_draft(app: App, key: str) -> str:
    record = app.core.store.draft(f"embedded|{key}")
    return record.text if record is not None else ""


async def test_draft_typed_into_a_fresh_window_survives_a_restart(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    use_fake_provider(tmp_path, provider.base_url)
    app = App.open(tmp_path, qtbot)
    text = "half a thought, never sent"
    try:
        await app.wait_online()
        qtbot.keyClicks(app.window.composer.edit, text)
        assert app.window.composer.edit.toPlainText() == text
        # The chat gets the gateway's key, and the autosave (debounced) reaches the store.
        await until(
            lambda: (
                (k := app.window.session_key) is not None
                and not k.startswith("new:")
                and _saved_draft(app, k) == text
            ),
            "the draft autosaved under the chat's durable key",
        )
        key = app.window.session_key
    finally:
        await app.close()

    again = App.open(tmp_path, qtbot)
    composer = again.window.composer
    try:
        assert again.window.session_key == key, "the last chat reopened"
        assert composer.edit.toPlainText() == text
        assert composer.notice_bar.isVisibleTo(again.window)
        assert composer.notice_label.text() == "Draft restored"
        assert provider.requests == [], "a draft is never sent"
    finally:
        await again.close()


def _saved_quote(app: App, key: str) -> tuple[str, str]:
    record = app.core.store.draft(f"embedded|{key}")
    return (record.quote, record.quote_from) if record is not None else ("", "")


async def test_a_quote_in_reply_is_kept_with_the_draft_across_a_restart(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    use_fake_provider(tmp_path, provider.base_url)
    app = App.open(tmp_path, qtbot)
    try:
        await app.wait_online()
        app.type_and_send(qtbot, "what do you see?")
        await until(lambda: len(app.finished_replies()) == 1, "the reply came")
        view = app.window.chat_view
        view.setFocus()
        qtbot.keyClick(view, Qt.Key.Key_End)
        qtbot.keySequence(view, "Ctrl+Shift+Q")
        composer = app.window.composer
        assert composer.quote_label.text() == "Replying to Assistant: I see your files."
        qtbot.keyClicks(composer.edit, "which files?")
        key = app.window.session_key
        assert key is not None
        # The autosave (debounced) reached the store: a crash from here on keeps the quote.
        await until(
            lambda: (
                _saved_draft(app, key) == "which files?"
                and _saved_quote(app, key) == ("I see your files.", "Assistant")
            ),
            "the quote saved with the draft",
        )
    finally:
        await app.close()

    again = App.open(tmp_path, qtbot)
    composer = again.window.composer
    try:
        await again.wait_online()
        assert again.window.session_key == key
        assert composer.edit.toPlainText() == "which files?"
        assert composer.quote_bar.isVisibleTo(again.window), "the reply-to line is back"
        assert composer.quote_label.text() == "Replying to Assistant: I see your files."
        qtbot.keyClick(composer.edit, Qt.Key.Key_Return)
        await until(lambda: len(provider.requests) == 2, "the reply with its quote sent")
        last = provider.requests[-1]["messages"][-1]
        assert last == {"role": "user", "content": "> I see your files.\n\nwhich files?"}
        assert not composer.quote_bar.isVisibleTo(again.window)
        await until(lambda: _saved_quote(again, key) == ("", ""), "the sent quote left the draft")
        # Removed is dropped too.
        view = again.window.chat_view
        await until(lambda: len(again.finished_replies()) == 2, "the second reply came")
        view.setFocus()
        qtbot.keyClick(view, Qt.Key.Key_End)
        qtbot.keySequence(view, "Ctrl+Shift+Q")
        await until(lambda: _saved_quote(again, key)[0] != "", "a new quote saved")
        composer.remove_quote_button.click()
        await until(lambda: _saved_quote(again, key) == ("", ""), "the removed quote left it")
    finally:
        await again.close()


async def test_pasted_image_and_dropped_file_reach_the_model(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    use_fake_provider(tmp_path, provider.base_url)
    notes = tmp_path / "notes.txt"
    notes.write_text("the secret ingredient is cardamom\n", "utf-8")
    app = App.open(tmp_path, qtbot)
    composer = app.window.composer
    clipboard = QGuiApplication.clipboard()
    try:
        await app.wait_online()
        image = QImage(8, 8, QImage.Format.Format_RGB32)
        image.fill(QColor("red"))
        clipboard.setImage(image)
        composer.edit.setFocus()
        qtbot.keyClick(composer.edit, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
        await until(lambda: len(composer.attachments) == 1, "pasted image chip")

        mime = QMimeData()
        mime.setUrls([QUrl.fromLocalFile(str(notes))])
        viewport = composer.edit.viewport()
        center = viewport.rect().center()
        copy, left = Qt.DropAction.CopyAction, Qt.MouseButton.LeftButton
        none = Qt.KeyboardModifier.NoModifier
        # A drag enters, moves over the text box and is dropped, as from a file manager.
        enter = QDragEnterEvent(center, copy, mime, left, none)
        QApplication.sendEvent(viewport, enter)
        assert enter.isAccepted(), "the composer accepts dragged files"
        QApplication.sendEvent(viewport, QDragMoveEvent(center, copy, mime, left, none))
        QApplication.sendEvent(viewport, QDropEvent(QPointF(center), copy, mime, left, none))
        await until(lambda: len(composer.attachments) == 2, "dropped file chip")
        names = [a.filename for a in composer.attachments]
        assert names[0].endswith(".png") and names[1] == "notes.txt"
        assert composer.chips.isVisibleTo(app.window)

        qtbot.keyClicks(composer.edit, "what do these show?")
        qtbot.keyClick(composer.edit, Qt.Key.Key_Return)
        assert composer.attachments == (), "the chips went with the message"
        await until(lambda: len(app.finished_replies()) == 1, "reply")
        assert app.finished_replies()[0].text == "I see your files."
        assert len(provider.requests) == 1
        content = provider.requests[0]["messages"][-1]["content"]
        flat = str(content)
        assert "what do these show?" in flat
        assert "cardamom" in flat and "notes.txt" in flat, "the file's text reached the model"
        urls = [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]
        assert len(urls) == 1 and urls[0].startswith("data:image/png;base64,")
        png = base64.b64decode(urls[0].split(",", 1)[1])
        assert QImage.fromData(png).pixelColor(3, 3) == QColor("red")
        user = app.bubbles(Role.USER)
        assert len(user) == 1
    finally:
        clipboard.clear()
        await app.close()
