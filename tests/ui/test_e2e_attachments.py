"""End to end: sent attachments stay on their message after a restart, and open or save."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QWidget

from desktop.core.models import ChatMessage, Role
from desktop.ui.chat.attachment_open import AttachmentActions
from desktop.ui.chat.render_cache import Change
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.attachment_screenshots import chart_png
from tests.ui.e2e_support import App, until, use_fake_provider

pytestmark = pytest.mark.slow

PROMPT = "what stands out in these?"


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer("June dips.") as fake:
        yield fake


def _prompt(app: App) -> ChatMessage | None:
    return next((m for m in app.bubbles(Role.USER) if m.text == PROMPT), None)


def _click_zone(app: App, message: ChatMessage, n: int) -> None:
    view = app.window.chat_view
    row = view.chat_model.row_of(message.id)
    assert row is not None
    index = view.chat_model.index(row)
    view.scrollTo(index)
    center = view.bubbles.zone_center(index, "attachment", n)
    assert center is not None, "the attachment is a button in the bubble"
    at = (center + view.visualRect(index).topLeft().toPointF()).toPoint()
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, at)


def _kept_copy(url: QUrl, data_dir: Path) -> bytes:
    path = Path(url.toLocalFile())
    assert path.is_relative_to(data_dir), "the app's own copy opens, not the original"
    return path.read_bytes()


async def test_a_sent_image_and_file_are_on_the_message_after_a_restart_and_open(
    qloop: Any,
    qtbot: Any,
    tmp_path: Path,
    provider: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_fake_provider(tmp_path, provider.base_url)
    chart = tmp_path / "chart.png"
    chart.write_bytes(chart_png())
    notes = tmp_path / "notes.txt"
    notes.write_text("signups up 18%\n", "utf-8")
    app = App.open(tmp_path, qtbot)
    try:
        await app.wait_online()
        app.window.composer.attach_files([str(chart), str(notes)])
        await until(lambda: len(app.window.composer.attachments) == 2, "two chips")
        app.type_and_send(qtbot, PROMPT)
        await until(lambda: len(app.finished_replies()) == 1, "the reply")
        await until(lambda: app.user_confirmed(PROMPT), "the prompt confirmed")
    finally:
        await app.close()
    # The originals go: the message keeps its own copies.
    chart_bytes = chart.read_bytes()
    chart.unlink()
    notes.unlink()

    opened: list[QUrl] = []
    monkeypatch.setattr(
        QDesktopServices, "openUrl", staticmethod(lambda url: opened.append(url) or True)
    )
    again = App.open(tmp_path, qtbot)
    try:
        await again.wait_online()
        # After the gateway's snapshot (a fresh gateway child, whose rows name no file).
        await until(
            lambda: (
                (m := _prompt(again)) is not None
                and not m.id.startswith("local:")
                and len(again.finished_replies()) == 1
                and [a.filename for a in m.attachments] == ["chart.png", "notes.txt"]
            ),
            "the prompt shows its attachments after the restart",
        )
        prompt = _prompt(again)
        assert prompt is not None
        view = again.window.chat_view
        row = view.chat_model.row_of(prompt.id)
        assert row is not None
        lay = view.bubbles.layout_for(view.chat_model.index(row))
        thumb, chip = lay.attachment_rects
        assert thumb.height() > 100 and thumb.width() > 100, "the image is a thumbnail"
        assert chip.height() < 40, "the text file is a chip"
        previews = view.render_cache.docs.previews
        assert previews.get(prompt.attachments[0]).pixmap is not None
        decoded = previews.decoded
        for _ in range(2):
            # Laid out and painted again, from scratch (as when another chat was opened).
            view.render_cache.invalidate(Change.SESSION)
            view.viewport().repaint()
        assert previews.decoded == decoded, "painting again does not decode the image again"

        _click_zone(again, prompt, 0)
        assert len(opened) == 1, "a click on the thumbnail opens it"
        assert _kept_copy(opened[0], again.paths.data) == chart_bytes

        # Save as… from the message's menu writes a copy where the user says.
        target = tmp_path / "saved" / "notes-copy.txt"

        def ask(cls: Any, parent: QWidget, suggested: str) -> str:
            assert suggested.endswith("notes.txt")
            return str(target)

        monkeypatch.setattr(AttachmentActions, "ask_save_path", classmethod(ask))
        menu = view.message_menu(row)
        labels = [a.text() for a in menu.actions()]
        assert "Open chart.png" in labels and "Save notes.txt as…" in labels
        next(a for a in menu.actions() if a.text() == "Save notes.txt as…").trigger()
        assert target.read_text("utf-8") == "signups up 18%\n"
        menu.close()
    finally:
        await again.close()


async def test_a_deleted_copy_says_file_missing_and_opens_nothing(
    qloop: Any,
    qtbot: Any,
    tmp_path: Path,
    provider: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_fake_provider(tmp_path, provider.base_url)
    chart = tmp_path / "chart.png"
    chart.write_bytes(chart_png())
    app = App.open(tmp_path, qtbot)
    try:
        await app.wait_online()
        app.window.composer.attach_files([str(chart)])
        await until(lambda: len(app.window.composer.attachments) == 1, "a chip")
        app.type_and_send(qtbot, PROMPT)
        await until(lambda: len(app.finished_replies()) == 1, "the reply")
        await until(lambda: app.user_confirmed(PROMPT), "the prompt confirmed")
    finally:
        await app.close()
    for copy in (tmp_path / "data" / "attachments").rglob("*"):
        if copy.is_file():
            # Changed on disk: still a picture, but not the one sent.
            copy.write_bytes(chart_png(320, 200))

    opened: list[QUrl] = []
    warned: list[str] = []
    monkeypatch.setattr(
        QDesktopServices, "openUrl", staticmethod(lambda url: opened.append(url) or True)
    )
    monkeypatch.setattr(
        AttachmentActions, "warn", classmethod(lambda cls, parent, text: warned.append(text))
    )
    again = App.open(tmp_path, qtbot)
    try:
        await again.wait_online()
        await until(
            lambda: (m := _prompt(again)) is not None and len(m.attachments) == 1,
            "the prompt shows its attachment after the restart",
        )
        prompt = _prompt(again)
        assert prompt is not None
        preview = again.window.chat_view.render_cache.docs.previews.get(prompt.attachments[0])
        assert preview.missing and preview.pixmap is None
        again.window.chat_view.viewport().repaint()  # painting a missing one does not raise
        _click_zone(again, prompt, 0)
        assert opened == []
        assert warned and "file missing" in warned[0]
    finally:
        await again.close()


async def test_the_files_stay_when_the_gateway_restarts_under_a_running_app(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    use_fake_provider(tmp_path, provider.base_url)
    notes = tmp_path / "notes.txt"
    notes.write_text("signups up 18%\n", "utf-8")
    app = App.open(tmp_path, qtbot)
    launcher = app.gateway_child
    try:
        await app.wait_online()
        app.window.composer.attach_files([str(notes)])
        await until(lambda: len(app.window.composer.attachments) == 1, "a chip")
        app.type_and_send(qtbot, PROMPT)
        await until(lambda: len(app.finished_replies()) == 1, "the reply")
        await until(lambda: app.user_confirmed(PROMPT), "the prompt confirmed")
        first_pid = launcher.pid
        assert first_pid is not None
        os.kill(first_pid, signal.SIGKILL)
        await until(lambda: launcher.pid not in (None, first_pid), "the gateway restarted")
        await app.wait_online()
        # The reconnect's snapshot rebuilds the chat from the gateway's rows.
        await until(
            lambda: (m := _prompt(app)) is not None and not m.id.startswith("local:"),
            "the prompt is the gateway's row again",
        )
        prompt = _prompt(app)
        assert prompt is not None
        assert [a.filename for a in prompt.attachments] == ["notes.txt"]
    finally:
        await app.close()
