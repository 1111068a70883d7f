"""Reading comfort in the chat view (issue #27): keyboard, find by match, zoom, width."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, Qt
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
