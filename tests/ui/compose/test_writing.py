"""Writing a message: the growing message box, attachments dropped anywhere, limits, previews."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QImage
from PySide6.QtTest import QTest

from desktop.common.limits import MAX_FILE_BYTES, MAX_IMAGE_BYTES
from desktop.core.disk.attachments import AttachmentStore
from desktop.gateway.sessions import attachments as gateway_attachments
from desktop.ui.compose.composer import (
    MAX_EDIT_HEIGHT,
    MIN_EDIT_HEIGHT,
    AttachmentChip,
    Composer,
)
from tests.ui.fakes import FakeBackend, wire_attachments


@pytest.fixture
def composer(qtbot: Any, tmp_path: Path) -> Composer:
    c = Composer()
    store = AttachmentStore(tmp_path / "data")
    wire_attachments(c, store.add, store.add)
    qtbot.addWidget(c)
    c.resize(600, 300)
    with qtbot.waitExposed(c):
        c.show()
    return c


def _png(path: Path, w: int = 64, h: int = 48) -> Path:
    image = QImage(w, h, QImage.Format.Format_RGB32)
    image.fill(Qt.GlobalColor.red)
    assert image.save(str(path), "PNG")
    return path


def test_message_box_grows_with_its_text_up_to_a_limit(qtbot: Any, composer: Composer) -> None:
    edit = composer.edit
    assert edit.height() == MIN_EDIT_HEIGHT
    QTest.keyClicks(edit, "first line")
    for i in range(4):
        QTest.keyClick(edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
        QTest.keyClicks(edit, f"line {i}")
    lines = 5 * edit.fontMetrics().lineSpacing()
    qtbot.wait_until(lambda: edit.height() >= lines > MIN_EDIT_HEIGHT)
    # Every line written is on screen: nothing scrolled out of sight.
    assert edit.verticalScrollBar().maximum() == 0
    for i in range(40):
        QTest.keyClick(edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
        QTest.keyClicks(edit, f"more {i}")
    qtbot.wait_until(lambda: edit.height() == MAX_EDIT_HEIGHT)
    edit.clear()
    qtbot.wait_until(lambda: edit.height() == MIN_EDIT_HEIGHT)


def test_a_file_too_large_for_the_gateway_is_refused_with_the_reason(
    qtbot: Any, composer: Composer, tmp_path: Path
) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(b"\0" * (MAX_FILE_BYTES + 1024 * 1024))
    small = tmp_path / "notes.txt"
    small.write_text("fine")
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(big)), QUrl.fromLocalFile(str(small))])
    composer.edit.insertFromMimeData(data)  # what a drop on the text box does
    assert composer.attach_warning.isVisible()
    assert composer.attach_warning.text() == (
        "Not attached: big.bin is 6.0 MiB; files can be at most 5 MiB"
    )
    assert [a.filename for a in composer.attachments] == ["notes.txt"]
    assert composer.edit.toPlainText() == ""


def test_client_limits_are_the_embedded_gateways() -> None:
    store = AttachmentStore("/nonexistent")
    assert store.max_file_bytes == gateway_attachments.MAX_FILE_BYTES == MAX_FILE_BYTES
    assert store.max_image_bytes == gateway_attachments.MAX_IMAGE_BYTES == MAX_IMAGE_BYTES
    assert (MAX_FILE_BYTES, MAX_IMAGE_BYTES) == (5 * 2**20, 10 * 2**20)


def _drop(win: Any, target: Any, data: QMimeData) -> None:
    """Deliver a drag and drop over `target` the way Qt does: to the nearest widget accepting it."""
    widget = target
    while not widget.acceptDrops():
        widget = widget.parentWidget()
    center = target.mapToGlobal(QPoint(target.width() // 2, target.height() // 2))
    pos = QPointF(widget.mapFromGlobal(center))
    action = Qt.DropAction.CopyAction
    enter = QDragEnterEvent(
        pos.toPoint(), action, data, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    QCoreApplication.sendEvent(widget, enter)
    assert enter.isAccepted(), f"{widget.objectName() or widget} refused the drag"
    drop = QDropEvent(pos, action, data, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QCoreApplication.sendEvent(widget, drop)


def test_image_dropped_on_the_conversation_is_attached_with_a_preview(
    make_window: Any, tmp_path: Path
) -> None:
    backend = FakeBackend(pid="p1")
    store = AttachmentStore(tmp_path / "data")
    backend.attach_file = store.add  # type: ignore[method-assign]
    win = make_window(backend)
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(_png(tmp_path / "cat.png")))])
    _drop(win, win.chat_view.viewport(), data)
    chips = win.composer.chips.findChildren(AttachmentChip)
    assert [c.attachment.filename for c in chips] == ["cat.png"]
    thumb = chips[0].thumb.pixmap()
    assert not thumb.isNull() and chips[0].thumb.isVisible()
    assert max(thumb.width(), thumb.height()) <= 28 and thumb.width() > thumb.height()
    assert win.composer.edit.hasFocus()
