"""Up/Down in an empty message box walk this chat's earlier prompts; a draft is never lost."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from desktop.core.models import SessionSummary
from tests.ui.fakes import FakeBackend, assistant, user


def _backend() -> FakeBackend:
    b = FakeBackend(pid="p1")
    b.summaries = [
        SessionSummary("s1", "Trip", "", 2.0, 4),
        SessionSummary("s2", "Other", "", 1.0, 1),
    ]
    b.messages = {
        "s1": [
            user("u1", "Plan a trip to Porto"),
            assistant("a1", "Day 1: Ribeira."),
            user("u2", "Add a day in Braga"),
            assistant("a2", "Day 4: Braga."),
        ],
        "s2": [user("u3", "Something elsewhere")],
    }
    return b


def test_up_and_down_walk_this_chats_prompts_and_down_past_the_newest_restores(
    make_window: Any,
) -> None:
    win = make_window(_backend())
    win.open_session("s1")
    edit = win.composer.edit
    edit.setFocus()
    edit.clear()
    QTest.keyClick(edit, Qt.Key.Key_Up)
    assert edit.toPlainText() == "Add a day in Braga"
    QTest.keyClick(edit, Qt.Key.Key_Up)
    assert edit.toPlainText() == "Plan a trip to Porto"
    QTest.keyClick(edit, Qt.Key.Key_Up)
    assert edit.toPlainText() == "Plan a trip to Porto", "the oldest stays"
    QTest.keyClick(edit, Qt.Key.Key_Down)
    assert edit.toPlainText() == "Add a day in Braga"
    QTest.keyClick(edit, Qt.Key.Key_Down)
    assert edit.toPlainText() == "", "past the newest: the box as it was"
    # An edited prompt is never replaced: the arrows move the cursor again.
    QTest.keyClick(edit, Qt.Key.Key_Up)
    QTest.keyClicks(edit, " and Guimaraes")
    QTest.keyClick(edit, Qt.Key.Key_Up)
    QTest.keyClick(edit, Qt.Key.Key_Down)
    assert edit.toPlainText() == "Add a day in Braga and Guimaraes"
    # A draft typed first is left alone: Up only starts in an empty box.
    edit.setPlainText("half a thought")
    QTest.keyClick(edit, Qt.Key.Key_Up)
    assert edit.toPlainText() == "half a thought"


def test_the_walk_is_this_chats_own(make_window: Any) -> None:
    win = make_window(_backend())
    win.open_session("s1")
    edit = win.composer.edit
    edit.setFocus()
    edit.clear()
    QTest.keyClick(edit, Qt.Key.Key_Up)
    assert edit.toPlainText() == "Add a day in Braga"
    win.open_session("s2")
    edit.setFocus()
    edit.clear()
    QTest.keyClick(edit, Qt.Key.Key_Up)
    assert edit.toPlainText() == "Something elsewhere"


# A popup window under the offscreen platform: it cannot grab the keyboard or raise (harmless).
@pytest.mark.qt_log_ignore("This plugin does not support")
def test_ctrl_r_searches_prompts_across_chats_and_enter_puts_one_in_the_box(
    make_window: Any, qtbot: Any
) -> None:
    win = make_window(_backend())
    win.open_session("s2")
    edit = win.composer.edit
    edit.setFocus()
    QTest.keySequence(win, "Ctrl+R")
    search = win.prompt_search
    qtbot.wait_until(lambda: search.isVisible() and search.filter.hasFocus())
    assert search.shown() == ["Add a day in Braga", "Plan a trip to Porto", "Something elsewhere"]
    assert search.filter.accessibleName() == "Prompt search"
    QTest.keyClicks(search.filter, "por")
    assert search.shown() == ["Plan a trip to Porto"], "filtered as you type"
    QTest.keyClick(search.filter, Qt.Key.Key_Return)
    assert not search.isVisible()
    assert edit.toPlainText() == "Plan a trip to Porto"
    # Esc leaves the box as it was; Down picks the second row.
    QTest.keySequence(win, "Ctrl+R")
    qtbot.wait_until(search.filter.hasFocus)
    QTest.keyClick(search.filter, Qt.Key.Key_Escape)
    assert not search.isVisible() and edit.toPlainText() == "Plan a trip to Porto"
    QTest.keySequence(win, "Ctrl+R")
    qtbot.wait_until(search.filter.hasFocus)
    QTest.keyClick(search.filter, Qt.Key.Key_Down)
    QTest.keyClick(search.filter, Qt.Key.Key_Down)
    QTest.keyClick(search.filter, Qt.Key.Key_Return)
    assert edit.toPlainText() == "Something elsewhere"
