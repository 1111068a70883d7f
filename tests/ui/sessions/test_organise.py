"""The chat list: several chats selected (Ctrl/Shift+click, Shift+arrows) and acted on."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from desktop.core.models import SessionSummary
from tests.ui.fakes import FakeBackend


def _backend() -> FakeBackend:
    b = FakeBackend(pid="p1")
    b.summaries = [
        SessionSummary("s1", "Kitchen", "tiles", 4.0, 2),
        SessionSummary("s2", "Animals", "quokkas", 3.0, 2),
        SessionSummary("s3", "Taxes", "receipts", 2.0, 2),
        SessionSummary("s4", "Garden", "roses", 1.0, 2),
    ]
    return b


def _click(win: Any, row: int, modifier: Qt.KeyboardModifier) -> None:
    view = win.sidebar.session_list
    rect = view.visualRect(win.sidebar.session_filter.index(row, 0))
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, modifier, rect.center())


def test_ctrl_click_selects_several_chats_and_delete_takes_them_all_with_one_undo(
    make_window: Any,
) -> None:
    b = _backend()
    win = make_window(b)
    side, undo = win.sidebar, win.chat_admin.undo
    _click(win, 0, Qt.KeyboardModifier.NoModifier)
    _click(win, 2, Qt.KeyboardModifier.ControlModifier)
    assert side.selected_keys() == ["s1", "s3"]
    QTest.keyClick(side.session_list, Qt.Key.Key_Delete)
    assert side.session_filter.rowCount() == 2
    assert undo.toast.label.text() == "Deleted 2 chats"
    assert undo.toast.undo_button.accessibleName() == "Undo delete"
    assert "delete_session" not in b.names()
    QTest.keySequence(win, "Ctrl+Z")  # undo from the keyboard
    assert side.session_filter.rowCount() == 4 and not undo.toast.isVisible()
    undo.timer.timeout.emit()
    assert "delete_session" not in b.names()
    _click(win, 0, Qt.KeyboardModifier.NoModifier)
    _click(win, 2, Qt.KeyboardModifier.ShiftModifier)
    QTest.keyClick(side.session_list, Qt.Key.Key_Delete)
    undo.timer.timeout.emit()
    assert [c for c in b.calls if c[0] == "delete_session"] == [
        ("delete_session", "s1"),
        ("delete_session", "s2"),
        ("delete_session", "s3"),
    ]


def test_shift_arrows_select_chats_from_the_keyboard_and_archive_takes_them_all(
    make_window: Any,
) -> None:
    b = _backend()
    win = make_window(b)
    side = win.sidebar
    side.session_list.setFocus()
    _click(win, 1, Qt.KeyboardModifier.NoModifier)
    QTest.keyClick(side.session_list, Qt.Key.Key_Down, Qt.KeyboardModifier.ShiftModifier)
    QTest.keyClick(side.session_list, Qt.Key.Key_Down, Qt.KeyboardModifier.ShiftModifier)
    assert side.selected_keys() == ["s2", "s3", "s4"]
    QTest.keySequence(side.session_list, "Ctrl+Shift+A")
    assert [c for c in b.calls if c[0] == "archive_session"] == [
        ("archive_session", ("s2", True)),
        ("archive_session", ("s3", True)),
        ("archive_session", ("s4", True)),
    ]
    assert win.status_message() == "3 chats archived; find them under Archived"
