"""Reading comfort in the chat view (issue #27): keyboard, find by match, zoom, width."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QPoint, Qt
from PySide6.QtTest import QTest

from desktop.core.models import ChatMessage
from desktop.ui.chat.view import ChatView
from tests.ui.fakes import assistant, user


@pytest.fixture
def view(qtbot: Any) -> ChatView:
    v = ChatView()
    qtbot.addWidget(v)
    v.resize(640, 480)
    with qtbot.waitExposed(v):
        v.show()
    return v


def _settle(qtbot: Any, v: ChatView) -> None:
    qtbot.wait_until(lambda: not v.bubbles._resize_timer.isActive())
    QCoreApplication.processEvents()
    qtbot.wait_until(lambda: not v.bubbles._resize_timer.isActive())


def _session(n: int) -> list[ChatMessage]:
    return [(user if i % 2 else assistant)(str(i), f"message {i} " * (1 + i % 7)) for i in range(n)]


def _on_screen(v: ChatView, row: int) -> bool:
    rect = v.visualRect(v.chat_model.index(row))
    return rect.intersects(v.viewport().rect())


def test_first_up_in_the_message_view_lands_on_a_message_on_screen(
    qtbot: Any, view: ChatView
) -> None:
    view.show_messages(_session(200))
    _settle(qtbot, view)
    value = view.verticalScrollBar().value()
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_Up)
    row = view.currentIndex().row()
    assert row >= 0
    assert _on_screen(view, row), "the message the first Up chose is on screen"
    assert view.verticalScrollBar().value() == value, "nothing scrolled away"
    assert row == view.chat_model.rowCount() - 1, "at the bottom, Up starts from the newest"
    # Scrolled up by hand, the first Up lands on the last message fully on screen.
    view.setCurrentIndex(view.chat_model.index(-1))
    view.verticalScrollBar().setValue(value // 2)
    _settle(qtbot, view)
    QTest.keyClick(view, Qt.Key.Key_Up)
    row = view.currentIndex().row()
    assert _on_screen(view, row)
    for _ in range(3):
        QTest.keyClick(view, Qt.Key.Key_Up)
        assert _on_screen(view, view.currentIndex().row()), "each Up scrolls to its message"


def _line_lengths(v: ChatView, row: int) -> list[int]:
    """The characters on each laid-out line of a message's text."""
    lengths = []
    for doc, _at in v.bubbles.layout_for(v.chat_model.index(row)).text_docs():
        block = doc.begin()
        while block.isValid():
            layout = block.layout()
            lengths += [layout.lineAt(i).textLength() for i in range(layout.lineCount())]
            block = block.next()
    return lengths


def test_a_reading_width_wraps_replies_at_a_comfortable_measure_in_a_centred_column(
    qtbot: Any, view: ChatView
) -> None:
    long = "Terracotta tiles keep a kitchen cool in summer and warm underfoot. " * 12
    view.resize(1500, 700)
    view.show_messages([user("u", "which tiles? " * 20), assistant("a", long)])
    _settle(qtbot, view)
    assert max(_line_lengths(view, 1)) > 90, "the whole view: long lines"
    view.set_reading_width(64)
    _settle(qtbot, view)
    lines = _line_lengths(view, 1)
    assert 50 <= max(lines) <= 72, f"wrapped near 64 characters, not {max(lines)}"
    width = view.viewport().width()
    reply = view.visualRect(view.chat_model.index(1))
    prompt = view.visualRect(view.chat_model.index(0))
    reply_bubble = view.bubbles.layout_for(view.chat_model.index(1)).bubble
    prompt_bubble = view.bubbles.layout_for(view.chat_model.index(0)).bubble
    left_gap = reply.left() + reply_bubble.left()
    right_gap = width - (prompt.left() + prompt_bubble.right())
    assert left_gap > 300, "the reply is not against the left edge of a wide window"
    assert abs(left_gap - right_gap) < 4, "the column is centred"
    # The text in the column is still selected where the pointer is.
    _doc, at = view.bubbles.layout_for(view.chat_model.index(1)).text_docs()[0]
    spot = reply.topLeft() + at.toPoint() + QPoint(6, 8)
    QTest.mouseDClick(
        view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, spot
    )
    assert view.selected_text() == "Terracotta"
    # A narrow window keeps its whole width.
    view.resize(500, 700)
    _settle(qtbot, view)
    assert view.column() == (0, view.viewport().width())


def test_a_drag_selects_across_messages_and_copies_them_in_order_with_their_roles(
    qtbot: Any, view: ChatView
) -> None:
    from PySide6.QtGui import QGuiApplication

    view.show_messages(
        [
            user("u1", "Which tiles suit a kitchen?"),
            assistant("a1", "Terracotta keeps it cool.\n\nSlate is harder wearing."),
            user("u2", "And for a bathroom floor?"),
            assistant("a2", "Porcelain, with a matt finish."),
        ]
    )
    _settle(qtbot, view)

    def spot_at(row: int, word: str) -> QPoint:
        index = view.chat_model.index(row)
        doc, at = view.bubbles.layout_for(index).text_docs()[0]
        cursor = doc.find(word)
        block = cursor.block()
        rect = doc.documentLayout().blockBoundingRect(block)
        layout = block.layout()
        offset = cursor.selectionStart() - block.position()
        line = layout.lineForTextPosition(offset)
        assert line.isValid()
        x = line.cursorToX(offset)
        x = x[0] if isinstance(x, tuple) else x
        y = rect.top() + line.y() + line.height() / 2
        return view.visualRect(index).topLeft() + QPoint(int(at.x() + x + 1), int(at.y() + y))

    start, end = spot_at(0, "tiles"), spot_at(2, "bathroom")
    left, none = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    before = view.viewport().grab().toImage()
    QTest.mousePress(view.viewport(), left, none, start)
    QTest.mouseMove(view.viewport(), spot_at(1, "Slate"))
    QTest.mouseMove(view.viewport(), end)
    QTest.mouseRelease(view.viewport(), left, none, end)
    text = view.selected_text()
    assert text == (
        "You: tiles suit a kitchen?\n\n"
        "Assistant: Terracotta keeps it cool.\nSlate is harder wearing.\n\n"
        "You: And for a"
    ), text
    # The reply between is drawn selected, not just the two ends.
    middle = view.visualRect(view.chat_model.index(1))
    after = view.viewport().grab().toImage()
    assert before.copy(middle) != after.copy(middle), "the whole reply between is highlighted"
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert QGuiApplication.clipboard().text() == text
    # Dragging back into the first message selects inside it alone again.
    QTest.mousePress(view.viewport(), left, none, start)
    QTest.mouseMove(view.viewport(), end)
    QTest.mouseMove(view.viewport(), spot_at(0, "kitchen"))
    QTest.mouseRelease(view.viewport(), left, none, spot_at(0, "kitchen"))
    assert view.selected_text() == "tiles suit a"  # no trailing space
    QTest.keyClick(view, Qt.Key.Key_Escape)
    assert view.selected_text() == ""


def test_shift_up_and_down_extend_a_selection_across_messages_copied_with_roles(
    qtbot: Any, view: ChatView
) -> None:
    from PySide6.QtGui import QGuiApplication

    view.show_messages(
        [
            user("u1", "Which tiles suit a kitchen?"),
            assistant("a1", "Terracotta keeps it cool.\n\nSlate is harder wearing."),
            user("u2", "And for a bathroom floor?"),
            assistant("a2", "Porcelain, with a matt finish."),
        ]
    )
    _settle(qtbot, view)
    view.setFocus()
    shift = Qt.KeyboardModifier.ShiftModifier
    QTest.keyClick(view, Qt.Key.Key_Up)
    QTest.keyClick(view, Qt.Key.Key_Up)  # on "And for a bathroom floor?"
    assert view.current_message().id == "u2"
    QTest.keyClick(view, Qt.Key.Key_Down, shift)  # its line, then into the reply below
    QTest.keyClick(view, Qt.Key.Key_Down, shift)
    assert view.selected_text() == (
        "You: And for a bathroom floor?\n\nAssistant: Porcelain, with a matt finish."
    )
    assert view.current_message().id == "a2", "the current message follows the selection"
    QTest.keyClick(view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert QGuiApplication.clipboard().text() == view.selected_text()
    # Back up: the reply leaves the selection, then the messages above join it, whole.
    view.clear_selection()
    QTest.keyClick(view, Qt.Key.Key_Up)  # on u2 again, the selection starting at its start
    QTest.keyClick(view, Qt.Key.Key_Up, shift)  # into the reply above
    assert view.current_message().id == "a1"
    QTest.keyClick(view, Qt.Key.Key_Up, shift)  # and the prompt above that
    text = view.selected_text()
    assert text == (
        "You: Which tiles suit a kitchen?\n\n"
        "Assistant: Terracotta keeps it cool.\nSlate is harder wearing."
    ), text
    QTest.keyClick(view, Qt.Key.Key_Down, shift)  # back down a line: the prompt leaves it
    assert view.selected_text().startswith("Assistant: Terracotta"), view.selected_text()
    QTest.keyClick(view, Qt.Key.Key_Up, shift)  # the first message: it stays
    assert view.selected_text() == text
    QTest.keyClick(view, Qt.Key.Key_Escape)
    assert view.selected_text() == ""
