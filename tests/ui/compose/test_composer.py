"""Composer: send keys, stop, attachments by paste and drop, draft notices."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QMimeData, Qt, QUrl
from PySide6.QtGui import QColor, QFontMetricsF, QImage
from PySide6.QtTest import QTest

from desktop.core.delivery.outbox import NOT_CONFIRMED
from desktop.core.models import DeliveryState
from desktop.ui.backend import Draft
from desktop.ui.compose.composer import SEND_CTRL_ENTER, Composer
from desktop.ui.render.bubble_layout import BubbleDocs, build_layout
from desktop.ui.render.delivery import failure_label
from desktop.ui.theme import LIGHT
from tests.ui.fakes import FakeBackend, make_attachment, user, wire_attachments


def _composer(qtbot: Any) -> tuple[Composer, FakeBackend]:
    c = Composer()
    qtbot.addWidget(c)
    backend = FakeBackend()
    wire_attachments(c, backend.attach_file, backend.attach_bytes)
    c.show()
    return c, backend


def test_enter_sends_and_shift_enter_adds_a_line(qtbot: Any) -> None:
    c, _ = _composer(qtbot)
    QTest.keyClicks(c.edit, "hello")
    QTest.keyClick(c.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    QTest.keyClicks(c.edit, "world")
    assert c.edit.toPlainText() == "hello\nworld"
    with qtbot.wait_signal(c.send_requested) as blocker:
        QTest.keyClick(c.edit, Qt.Key.Key_Return)
    assert blocker.args == ["hello\nworld", ()]
    assert c.edit.toPlainText() == ""


def test_send_key_can_be_ctrl_enter(qtbot: Any) -> None:
    c, _ = _composer(qtbot)
    c.set_send_key(SEND_CTRL_ENTER)
    QTest.keyClicks(c.edit, "a")
    with qtbot.assert_not_emitted(c.send_requested):
        QTest.keyClick(c.edit, Qt.Key.Key_Return)
    assert c.edit.toPlainText() == "a\n"
    with qtbot.wait_signal(c.send_requested):
        QTest.keyClick(c.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)


def test_send_disabled_while_empty_and_nothing_sent(qtbot: Any) -> None:
    c, _ = _composer(qtbot)
    assert not c.send_button.isEnabled()
    with qtbot.assert_not_emitted(c.send_requested):
        QTest.keyClick(c.edit, Qt.Key.Key_Return)
    QTest.keyClicks(c.edit, "   ")
    assert not c.send_button.isEnabled()
    QTest.keyClicks(c.edit, "x")
    assert c.send_button.isEnabled()


def test_esc_and_stop_button_interrupt_only_while_running(qtbot: Any) -> None:
    c, _ = _composer(qtbot)
    with qtbot.assert_not_emitted(c.stop_requested):
        QTest.keyClick(c.edit, Qt.Key.Key_Escape)
    c.set_running(True)
    assert c.stop_button.isVisible() and not c.send_button.isVisible()
    with qtbot.wait_signal(c.stop_requested):
        QTest.keyClick(c.edit, Qt.Key.Key_Escape)
    with qtbot.wait_signal(c.stop_requested):
        c.stop_button.click()
    c.set_running(False)
    assert c.send_button.isVisible() and not c.stop_button.isVisible()


def test_pasted_image_becomes_a_png_chip(qtbot: Any) -> None:
    c, backend = _composer(qtbot)
    image = QImage(8, 8, QImage.Format.Format_ARGB32)
    image.fill(QColor("red"))
    mime = QMimeData()
    mime.setImageData(image)
    c.edit.insertFromMimeData(mime)
    name, (size, filename, head) = backend.calls[-1]
    assert name == "attach_bytes" and filename.endswith(".png") and size > 0
    assert head == b"\x89PNG\r\n\x1a\n"
    assert [a.filename for a in c.attachments] == [filename]
    assert c.send_button.isEnabled()
    assert c.edit.toPlainText() == ""


def test_dropped_file_becomes_a_removable_chip(qtbot: Any, tmp_path: Any) -> None:
    c, backend = _composer(qtbot)
    f = tmp_path / "notes.txt"
    f.write_text("hi")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(f))])
    assert c.edit.canInsertFromMimeData(mime)
    with qtbot.wait_signal(c.draft_changed) as blocker:
        c.edit.insertFromMimeData(mime)
    assert ("attach_file", str(f)) in backend.calls
    assert [a.filename for a in blocker.args[0].attachments] == ["notes.txt"]
    assert c.chips.isVisible()
    chip_button = c.chips.findChildren(type(c.attach_button))[0]
    chip_button.click()
    assert c.attachments == ()
    assert not c.chips.isVisible()


def test_attach_button_uses_patchable_file_dialog(qtbot: Any, monkeypatch: Any) -> None:
    c, backend = _composer(qtbot)
    monkeypatch.setattr(
        Composer, "pick_files", classmethod(lambda cls, parent, start="": ["/x/a.pdf"])
    )
    c.attach_button.click()
    assert ("attach_file", "/x/a.pdf") in backend.calls
    assert [a.filename for a in c.attachments] == ["a.pdf"]
    with qtbot.wait_signal(c.send_requested) as blocker:
        c.send_button.click()
    assert [a.filename for a in blocker.args[1]] == ["a.pdf"]
    assert c.attachments == ()


def test_text_changes_are_published_for_autosave(qtbot: Any) -> None:
    c, _ = _composer(qtbot)
    with qtbot.wait_signal(c.draft_changed) as blocker:
        QTest.keyClicks(c.edit, "d")
    assert blocker.args[0] == Draft("d", 1, ())


def test_draft_restored_notice_and_undo(qtbot: Any) -> None:
    c, _ = _composer(qtbot)
    att = make_attachment("plan.md", b"1")
    c.show_draft_restored(Draft("half-written", 4, (att,)))
    assert c.notice_bar.isVisible()
    assert c.edit.toPlainText() == "half-written"
    assert c.attachments == (att,)
    c.undo_button.click()
    assert c.edit.toPlainText() == ""
    assert c.attachments == ()
    assert not c.notice_bar.isVisible()


def test_delivery_not_confirmed_restore_puts_text_and_chips_back(qtbot: Any) -> None:
    c, _ = _composer(qtbot)
    att = make_attachment("photo.png", b"img")
    c.restore_prompt(Draft("deploy now", 10, (att,)), NOT_CONFIRMED)
    assert c.banner.isVisible()
    assert c.banner_label.text() == "Delivery not confirmed. Your message is back here."
    assert c.edit.toPlainText() == "deploy now"
    assert c.attachments == (att,)
    with qtbot.wait_signal(c.send_requested) as blocker:
        c.retry_button.click()
    assert blocker.args == ["deploy now", (att,)]
    assert not c.banner.isVisible()


def test_draft_not_saved_warning(qtbot: Any) -> None:
    c, _ = _composer(qtbot)
    c.set_save_state(False, "disk full")
    assert c.save_warning.isVisible()
    assert "disk full" in c.save_warning.text()
    c.set_save_state(True, "")
    assert not c.save_warning.isVisible()


def test_a_prompt_refused_or_never_sent_names_its_cause_not_delivery(qtbot: Any) -> None:
    c, _ = _composer(qtbot)
    for cause in (
        "gateway storage full (disk is full)",
        "session no longer exists",
        "plan.md: the attachment's stored copy is missing",
    ):
        c.restore_prompt(Draft("deploy now", 10, ()), cause)
        assert c.banner_label.text() == f"Not sent: {cause}. Your message is back here."
        assert "not confirmed" not in c.banner_label.text().lower()


def test_a_failed_prompt_bubble_is_wide_enough_for_its_whole_cause(qtbot: Any) -> None:
    composer = Composer()
    qtbot.addWidget(composer)
    font = composer.font()
    msg = user("u1", "Hi", DeliveryState.FAILED)
    msg.delivery_error = "gateway storage full (disk is full)"
    lay = build_layout(msg, 1000, font, LIGHT, frozenset(), docs=BubbleDocs())
    text = failure_label(msg.delivery_error)
    assert text == "Not sent: gateway storage full (disk is full)"
    assert lay.error_rect is not None
    assert lay.error_rect.width() >= QFontMetricsF(font).horizontalAdvance(text)
    assert lay.error_rect.right() <= lay.bubble.right()


def test_files_the_gateway_would_refuse_are_refused_here_with_the_reason(
    qtbot: Any, tmp_path: Any
) -> None:
    # Real files through the app's AttachmentStore (the gateway's limits, desktop/common/limits).
    from desktop.common.limits import MAX_ATTACHMENTS, MAX_INLINE_TEXT_BYTES
    from desktop.core.disk.attachments import AttachmentStore

    c = Composer()
    qtbot.addWidget(c)
    files = AttachmentStore(tmp_path / "data")
    wire_attachments(c, files.add, files.add)
    c.show()
    log = tmp_path / "log.txt"
    log.write_text("x" * (MAX_INLINE_TEXT_BYTES + 1), "utf-8")
    c.attach_files([str(log)])
    assert c.attachments == ()
    assert c.attach_warning.isVisible()
    assert "log.txt" in c.attach_warning.text()
    assert "text files can be at most 256 KiB" in c.attach_warning.text()
    paths = []
    for n in range(MAX_ATTACHMENTS + 1):
        path = tmp_path / f"note-{n}.txt"
        path.write_text(f"note {n}", "utf-8")
        paths.append(str(path))
    c.attach_files(paths)
    assert [a.filename for a in c.attachments] == [f"note-{n}.txt" for n in range(10)]
    assert c.attach_warning.isVisible()
    assert c.attach_warning.text() == (
        "Not attached: note-10.txt: a message can carry at most 10 attachments"
    )


def test_a_message_over_the_frame_limit_is_refused_with_its_size_and_kept(qtbot: Any) -> None:
    """A pasted 9 MB log: Enter does not send it (its frame would close the connection); the
    composer says how large it is and what the limit is, and keeps every character."""
    c, _ = _composer(qtbot)
    huge = "log line\n" * (1024 * 1024)  # 9 MB
    c.edit.setPlainText(huge)
    with qtbot.assert_not_emitted(c.send_requested):
        QTest.keyClick(c.edit, Qt.Key.Key_Return)
    assert c.attach_warning.isVisible()
    assert c.attach_warning.text() == (
        "Not sent: this message is 9.0 MB and a message can be at most 7.8 MB: "
        "shorten it, or send it in parts."
    )
    assert c.edit.toPlainText() == huge
