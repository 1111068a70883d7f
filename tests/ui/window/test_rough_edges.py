"""The rough edges of a first hour (issue #27), each driven through the real widgets."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtGui import QInputMethodEvent
from PySide6.QtTest import QTest

from desktop.core.models import SessionSummary
from tests.ui.fakes import FakeBackend, assistant, user


def _backend() -> FakeBackend:
    b = FakeBackend(pid="p1")
    b.summaries = [
        SessionSummary("s1", "Kitchen tiles", "tiles", 3.0, 2),
        SessionSummary("s2", "Animals", "marsupials", 2.0, 2),
        SessionSummary("s3", "Garden", "roses", 1.0, 2),
    ]
    b.messages = {
        "s1": [user("u1", "which tiles?"), assistant("a1", "Terracotta tiles.")],
        "s2": [user("u2", "tell me about quokkas"), assistant("a2", "A quokka smiles.")],
        "s3": [user("u3", "roses?"), assistant("a3", "Prune them in March.")],
    }
    return b


def test_typing_in_search_keeps_the_open_chat_until_enter(make_window: Any) -> None:
    b = _backend()
    win = make_window(b)
    win.open_session("s3")
    QTest.keyClicks(win.search_box, "quokka")
    assert win.session_filter.rowCount() == 1
    assert win.session_key == "s3", "filtering the list does not open its first chat"
    assert win.chat_view.chat_model.message_at(0).text == "roses?"
    QTest.keyClick(win.search_box, Qt.Key.Key_Backspace)
    QTest.keyClicks(win.search_box, "a")
    assert win.session_key == "s3"
    QTest.keyClick(win.search_box, Qt.Key.Key_Return)
    assert win.session_key == "s2", "Enter opens the first result"


def test_esc_in_search_clears_it_and_shows_every_chat(make_window: Any) -> None:
    b = _backend()
    win = make_window(b)
    win.open_session("s1")
    win.sidebar.focus_search()
    QTest.keyClicks(win.search_box, "garden")
    assert win.session_filter.rowCount() == 1
    b.emit("on_running", "s1", True)
    QTest.keyClick(win.search_box, Qt.Key.Key_Escape)
    assert win.search_box.text() == ""
    assert win.session_filter.rowCount() == 3
    assert "interrupt" not in b.names(), "Esc in a filled search box clears it, stops nothing"
    assert win.session_key == "s1"
    assert win.sidebar.selected_key() == "s1", "the open chat is still the list's current one"


def _listed(win: Any) -> list[str]:
    return [
        win.session_filter.index(r, 0).data(Qt.ItemDataRole.UserRole + 2)
        for r in range(win.session_filter.rowCount())
    ]


def test_ctrl_n_reuses_an_empty_new_chat_and_drops_it_when_left(make_window: Any) -> None:
    b = _backend()
    win = make_window(b)
    win.open_session("s1")
    for _ in range(3):
        QTest.keyClick(win.composer.edit, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert b.names().count("create_session") == 1, "one empty new chat, opened again"
    new = win.session_key
    assert new is not None and new.startswith("p1-new")
    assert _listed(win) == [new, "s1", "s2", "s3"]
    win.open_session("s2")
    assert _listed(win) == ["s1", "s2", "s3"], "an empty chat left behind is not listed"
    QTest.keyClick(win.composer.edit, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert win.session_key == new and b.names().count("create_session") == 1
    # A chat with a draft in it is kept when left.
    QTest.keyClicks(win.composer.edit, "half a thought")
    win.open_session("s3")
    assert new in _listed(win)


def test_ctrl_q_quits_for_good_keeping_the_draft(
    make_window: Any, qtbot: Any, monkeypatch: Any
) -> None:
    b = _backend()
    win = make_window(b)
    win.open_session("s1")
    win.set_close_to_tray(True)
    monkeypatch.setattr(type(win.tray), "can_hide_to_tray", property(lambda self: True))
    QTest.keyClicks(win.composer.edit, "left for later")
    with qtbot.waitSignal(win.quit_requested, timeout=1000):
        QTest.keyClick(win.composer.edit, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    assert not win.isVisible()
    saves = [args for name, args in b.calls if name == "save_draft"]
    assert saves and saves[-1][:2] == ("s1", "left for later")


def test_enter_while_an_input_method_composes_does_not_send(make_window: Any) -> None:
    b = _backend()
    win = make_window(b)
    win.open_session("s1")
    edit = win.composer.edit
    edit.setFocus()
    QTest.keyClicks(edit, "I live in ")
    # A CJK input method shows the reading being composed as preedit text, not yet typed.
    QCoreApplication.sendEvent(edit, QInputMethodEvent("にほん", []))
    assert edit.toPlainText() == "I live in "
    QTest.keyClick(edit, Qt.Key.Key_Return)
    assert "send" not in b.names(), "Enter during composition confirms the reading, sends nothing"
    commit = QInputMethodEvent()
    commit.setCommitString("日本")
    QCoreApplication.sendEvent(edit, commit)
    assert edit.toPlainText() == "I live in 日本"
    QTest.keyClick(edit, Qt.Key.Key_Return)
    assert [args for name, args in b.calls if name == "send"] == [("s1", "I live in 日本", ())]


def test_copied_shows_over_the_chat_without_moving_the_layout(make_window: Any, qtbot: Any) -> None:
    b = _backend()
    win = make_window(b)
    win.open_session("s1")
    view = win.chat_view
    before = (view.geometry(), win.composer.geometry(), win.centralWidget().geometry())
    view.setFocus()
    view.setCurrentIndex(view.chat_model.index(1))
    QTest.keyClick(view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    QCoreApplication.processEvents()
    assert win.status_message() == "Copied"
    assert (view.geometry(), win.composer.geometry(), win.centralWidget().geometry()) == before
    toast = win.pane.toast
    assert view.geometry().contains(toast.geometry()), "it floats over the chat's bottom"
    toast.timer.timeout.emit()  # its time is up (the timer, not a wait)
    assert win.status_message() == ""
    assert (view.geometry(), win.composer.geometry(), win.centralWidget().geometry()) == before
