"""Main window against the scripted backend: sending, stopping, profiles, drafts, persistence."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QEvent, QObject, QPoint, QSettings, Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QDialog, QLineEdit

from desktop.core.models import (
    ConnectionState,
    ConnectionStatus,
    DeliveryState,
    ModelChoice,
    SessionInfo,
    SessionSummary,
)
from desktop.ui.backend import Draft
from desktop.ui.chat.approval import ApprovalCard
from desktop.ui.platform.tray import Tray
from desktop.ui.settings.dialog import SettingsDialog
from desktop.ui.shortcuts import SHORTCUTS, ShortcutsDialog
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.chat_admin import Dialogs
from desktop.ui.window.main_window import MainWindow, ProfileEntry
from tests.ui.fakes import FakeBackend, approval, assistant, make_attachment, user


def _backend(pid: str) -> FakeBackend:
    b = FakeBackend(pid=pid)
    b.summaries = [
        SessionSummary("s1", f"{pid} first", "hello", 1.0, 2),
        SessionSummary("s2", f"{pid} second", "bye", 2.0, 1, unread=3),
    ]
    b.messages = {
        "s1": [user("u1", "hello"), assistant("a1", f"{pid} says hi")],
        "s2": [user("u2", "tell me about quokkas")],
    }
    return b


def _click_zone(view: Any, row: int, kind: str) -> None:
    index = view.chat_model.index(row)
    center = view.bubbles.zone_center(index, kind)
    rect = view.visualRect(index)
    pos = QPoint(int(rect.left() + center.x()), int(rect.top() + center.y()))
    QTest.mouseClick(
        view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pos
    )


def test_enter_sends_to_the_open_session_once(make_window: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    win.open_session("s1")
    QTest.keyClicks(win.composer.edit, "what's new?")
    QTest.keyClick(win.composer.edit, Qt.Key.Key_Return)
    assert [c for c in b.calls if c[0] == "send"] == [("send", ("s1", "what's new?", ()))]
    assert win.composer.edit.toPlainText() == ""


def test_send_without_session_creates_one(make_window: Any) -> None:
    b = FakeBackend(pid="p1")
    win = make_window(b)
    assert win.session_key is None
    QTest.keyClicks(win.composer.edit, "first words")
    QTest.keyClick(win.composer.edit, Qt.Key.Key_Return)
    sends = [args for name, args in b.calls if name == "send"]
    assert len(sends) == 1 and sends[0][1] == "first words"
    assert sends[0][0] == win.session_key


def test_esc_and_stop_interrupt_running_turn(make_window: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    win.open_session("s1")
    QTest.keyClick(win.composer.edit, Qt.Key.Key_Escape)
    assert "interrupt" not in b.names(), "nothing to stop while idle"
    b.emit("on_running", "s1", True)
    assert win.composer.stop_button.isVisible()
    QTest.keyClick(win.composer.edit, Qt.Key.Key_Escape)
    assert b.calls[-1] == ("interrupt", "s1")
    win.composer.stop_button.click()
    assert b.names().count("interrupt") == 2
    b.emit("on_running", "s1", False)
    assert not win.composer.stop_button.isVisible()


def test_streaming_reply_reaches_the_view(qtbot: Any, make_window: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    win.open_session("s1")
    reply = assistant("a2", "", streaming=True)
    b.emit("on_message_changed", "s1", reply)
    for part in ("Quokkas ", "are ", "happy."):
        reply.text += part
        b.emit("on_message_changed", "s1", reply)
    with qtbot.wait_signal(win.chat_view.chat_model.flushed):
        pass
    assert win.chat_view.chat_model.message_at(2).text == "Quokkas are happy."


def test_profile_switch_isolates_events(qtbot: Any, make_window: Any) -> None:
    p1, p2 = _backend("p1"), _backend("p2")
    win = make_window(p1, p2)
    assert win.profile_id == "p1"
    win.open_session("s1")
    # p2 talks about a session with the same key while p1 is shown: nothing of it appears.
    p2.emit("on_message_changed", "s1", assistant("x", "LEAK from p2"))
    p2.set_status(ConnectionStatus(ConnectionState.FAILED, 1, 1, reason="p2 down"))
    p2.emit("on_notice", "s1", "p2 notice")
    p2.emit("on_running", "s1", True)
    p2.emit("on_approval_request", "s1", approval("p2req"))
    p2.set_sessions([SessionSummary("z", "only p2")])
    win.chat_view.chat_model.flush()
    model = win.chat_view.chat_model
    texts = [model.message_at(r).text for r in range(model.rowCount())]
    assert texts == ["hello", "p1 says hi"]
    assert win.connection.label.text() == "Online"
    assert not win.notice_label.isVisible()
    assert not win.composer.stop_button.isVisible()
    assert not win.approvals.findChildren(ApprovalCard)
    assert win.session_model.row_of("z") is None
    win.profile_combo.setCurrentIndex(1)
    assert win.profile_id == "p2"
    assert win.connection.label.text() == "Failed: p2 down"
    assert win.session_model.row_of("z") is not None
    assert [c.request.request_id for c in win.approvals.findChildren(ApprovalCard)] == []
    win.open_session("s1")
    assert [c.request.request_id for c in win.approvals.findChildren(ApprovalCard)] == ["p2req"]
    texts = [model.message_at(r).text for r in range(model.rowCount())]
    assert texts == ["hello", "p2 says hi"]
    p1.emit("on_message_changed", "s1", assistant("y", "LEAK from p1"))
    win.chat_view.chat_model.flush()
    assert model.rowCount() == 2
    # Nor does what p1 says of itself, now that p2 is shown.
    p1.set_status(ConnectionStatus(ConnectionState.FAILED, 1, 1, reason="p1 down"))
    p1.emit("on_notice", "", "p1 notice")
    p1.set_sessions([SessionSummary("y", "only p1")])
    assert win.connection.label.text() == "Failed: p2 down"
    assert not win.notice_label.isVisible()
    assert win.session_model.row_of("y") is None


def test_draft_autosave_and_restore_with_undo(make_window: Any) -> None:
    b = _backend("p1")
    b.drafts["s2"] = Draft("saved before", 5, ())
    win = make_window(b)
    win.open_session("s1")
    QTest.keyClicks(win.composer.edit, "abc")
    assert b.drafts["s1"].text == "abc"
    assert ("save_draft", ("s1", "abc")) in b.calls
    win.open_session("s2")
    assert win.composer.edit.toPlainText() == "saved before"
    assert not win.composer.notice_bar.isVisible()
    win.open_session("s1")
    assert win.composer.edit.toPlainText() == "abc"
    b.emit("on_draft_restored", "s1", Draft("recovered after crash", 3, ()))
    assert win.composer.notice_bar.isVisible()
    assert win.composer.edit.toPlainText() == "recovered after crash"
    win.composer.undo_button.click()
    assert win.composer.edit.toPlainText() == "abc"
    b.emit("on_draft_save_state", "s1", False, "read-only data dir")
    assert "read-only" in win.composer.save_warning.text()
    assert win.composer.save_warning.isVisible()


def test_delivery_not_confirmed_restore_and_retry(make_window: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    win.open_session("s1")
    att = make_attachment("report.pdf", b"%PDF")
    b.emit("on_prompt_restored", "s1", Draft("ship it", 7, (att,)), "gateway restarted")
    assert win.composer.banner.isVisible()
    assert win.composer.edit.toPlainText() == "ship it"
    assert win.composer.attachments == (att,)
    win.composer.retry_button.click()
    assert [a for n, a in b.calls if n == "send"] == [("s1", "ship it", (att,))]


def test_failed_message_actions_reach_backend(qtbot: Any, make_window: Any) -> None:
    b = _backend("p1")
    failed = user("u9", "lost in transit", DeliveryState.FAILED)
    b.messages["s1"].append(failed)
    win = make_window(b)
    win.open_session("s1")
    view = win.chat_view
    qtbot.wait_until(lambda: 2 in view.bubbles.painted_rows)
    _click_zone(view, 2, "retry")
    assert b.calls[-1] == ("retry", "u9")
    _click_zone(view, 2, "discard")
    assert b.calls[-1] == ("discard", "u9")
    _click_zone(view, 2, "edit")
    assert ("edit_unsent", "u9") in b.calls
    assert win.composer.edit.toPlainText() == "lost in transit"


def test_approval_card_answer_goes_to_backend(make_window: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    win.open_session("s1")
    b.emit("on_approval_request", "s1", approval("r7"))
    cards = win.approvals.findChildren(ApprovalCard)
    assert len(cards) == 1 and win.approvals.isVisible()
    assert [btn.text() for btn in cards[0].buttons] == [
        "Allow once",
        "Allow this session",
        "Always allow",
        "Deny",
    ]
    approve = next(btn for btn in cards[0].buttons if btn.text() == "Allow this session")
    approve.click()
    assert b.calls[-1] == ("respond", ("s1", "r7", "session"))
    assert not win.approvals.isVisible()
    b.emit("on_approval_request", "s1", approval("q1", kind="clarify"))
    card = win.approvals.findChildren(ApprovalCard)[-1]
    assert card.answer_edit is not None
    QTest.keyClicks(card.answer_edit, "use staging")
    QTest.keyClick(card.answer_edit, Qt.Key.Key_Return)
    assert b.calls[-1] == ("respond", ("s1", "q1", "use staging"))


def test_last_session_and_geometry_remembered(qtbot: Any, settings: QSettings) -> None:
    b = _backend("p1")
    win = MainWindow([ProfileEntry("P1", ProfileBridge(b))], settings, tray=Tray())
    qtbot.addWidget(win)
    win.resize(777, 555)
    win.show()
    win.open_session("s2")
    win.close()
    b2 = _backend("p1")
    again = MainWindow([ProfileEntry("P1", ProfileBridge(b2))], settings, tray=Tray())
    qtbot.addWidget(again)
    assert again.session_key == "s2"
    assert again.chat_view.chat_model.message_at(0).text == "tell me about quokkas"
    assert again.size().width() == 777


def test_search_matches_titles_and_message_text(make_window: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    QTest.keyClicks(win.search_box, "second")
    assert win.session_filter.rowCount() == 1
    win.search_box.clear()
    QTest.keyClicks(win.search_box, "quokka")
    keys = [
        win.session_filter.index(r, 0).data(Qt.ItemDataRole.UserRole + 2)
        for r in range(win.session_filter.rowCount())
    ]
    assert keys == ["s2"]
    win.search_box.clear()
    assert win.session_filter.rowCount() == 2


def test_shortcuts_dialog_lists_every_shortcut(
    qtbot: Any, make_window: Any, monkeypatch: Any
) -> None:
    win = make_window(_backend("p1"))
    seen: list[QDialog] = []
    monkeypatch.setattr(Dialogs, "run", classmethod(lambda cls, d: seen.append(d) or 0))
    with qtbot.waitActive(win):
        win.activateWindow()
    QTest.keyClick(win.composer.edit, Qt.Key.Key_F1)
    assert len(seen) == 1 and isinstance(seen[0], ShortcutsDialog)
    rows = seen[0].rows()
    assert [r[0] for r in rows] == [s.description for s in SHORTCUTS]
    assert all(r[1] for r in rows)
    assert len(win.actions_by_name) == len(SHORTCUTS)


def test_shortcut_keys_trigger_actions(make_window: Any, monkeypatch: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    seen: list[QDialog] = []
    monkeypatch.setattr(Dialogs, "run", classmethod(lambda cls, d: seen.append(d) or 0))
    win.actions_by_name["new_chat"].trigger()
    assert "create_session" in b.names()
    assert win.session_key == b.calls[-2][1] or win.session_key.startswith("p1-new")
    win.actions_by_name["settings"].trigger()
    assert isinstance(seen[-1], SettingsDialog)
    b.emit("on_running", win.session_key, True)
    win.actions_by_name["stop"].trigger()
    assert b.calls[-1] == ("interrupt", win.session_key)


def test_reply_finished_unfocused_notifies_and_unread_shows(make_window: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    win.open_session("s1")
    assert win.windowTitle() == "Hermes (3)"
    win.isActiveWindow = lambda: False  # type: ignore[method-assign]
    b.emit("on_message_changed", "s1", assistant("a5", "All done: 42"))
    win.chat_view.chat_model.flush()
    b.emit("on_running", "s1", False)
    assert win.tray.notified == [("p1 first", "All done: 42")]
    win.isActiveWindow = lambda: True  # type: ignore[method-assign]
    b.emit("on_running", "s1", False)
    assert len(win.tray.notified) == 1


def test_a_hidden_profile_still_notifies_and_counts_unread(make_window: Any) -> None:
    p1, p2 = _backend("p1"), _backend("p2")
    win = make_window(p1, p2)
    win.open_session("s1")
    assert win.windowTitle() == "Hermes (6)", "both profiles' unread chats"
    win.isActiveWindow = lambda: False  # type: ignore[method-assign]
    p2.emit("on_running", "s2", False)
    # Its chat is not on screen: the list's preview is announced, the view stays p1's.
    assert win.tray.notified == [("p2 second", "bye")]
    assert win.profile_id == "p1" and win.session_key == "s1"
    p2.set_sessions([SessionSummary("s2", "p2 second", "bye", 2.0, 1, unread=4)])
    assert win.windowTitle() == "Hermes (7)"
    shown = win.session_model.session("s2")
    assert shown is not None and shown.title == "p1 second", "p1's list stays"


def test_idle_window_runs_no_timers(qtbot: Any, make_window: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    win.open_session("s1")
    b.set_status(ConnectionStatus(ConnectionState.RECONNECTING, 1, 1, retry_at=1e12))
    assert win.connection.countdown_active
    b.set_status(ConnectionStatus(ConnectionState.ONLINE, 1, 2))
    win.chat_view.chat_model.flush()
    qtbot.wait_until(lambda: not any(t.isActive() for t in win.findChildren(QTimer)))


def test_connection_buttons_reach_backend(make_window: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    win.connection.pause_button.click()
    b.set_status(ConnectionStatus(ConnectionState.PAUSED, 1, 1))
    win.connection.resume_button.click()
    b.set_status(ConnectionStatus(ConnectionState.RECONNECTING, 1, 1))
    win.connection.reconnect_button.click()
    assert b.names()[-3:] == ["pause", "resume", "reconnect_now"]


def test_rename_and_delete_selected_chat(make_window: Any, monkeypatch: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    win.open_session("s2")
    monkeypatch.setattr(
        Dialogs, "ask_text", classmethod(lambda cls, p, t, label, text: " Quokka facts ")
    )
    win.actions_by_name["rename_session"].trigger()
    assert b.calls[-1] == ("rename_session", ("s2", "Quokka facts"))
    win.actions_by_name["delete_session"].trigger()
    assert "delete_session" not in b.names(), "undoable first: the backend is told later"
    assert win.session_key is None
    assert win.chat_view.chat_model.rowCount() == 0
    win.chat_admin.undo.timer.timeout.emit()  # the undo window passed
    assert b.calls[-1] == ("delete_session", "s2")
    win.open_session("s1")
    win.actions_by_name["delete_session"].trigger()
    win.chat_admin.undo.toast.undo_button.click()
    win.chat_admin.undo.timer.timeout.emit()
    assert b.names().count("delete_session") == 1, "an undone delete deletes nothing"


def test_local_session_key_replaced_by_durable_key_keeps_the_view(make_window: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    key = b.create_session()
    win.open_session(key)
    QTest.keyClicks(win.composer.edit, "still typing")
    b.emit("on_message_changed", key, user("m1", "sent already"))
    b.summaries.insert(0, SessionSummary("durable-1", "New chat"))
    b.emit("on_session_key_changed", key, "durable-1")
    assert win.session_key == "durable-1"
    assert win.composer.edit.toPlainText() == "still typing"
    b.emit("on_message_changed", "durable-1", assistant("m2", "reply"))
    win.chat_view.chat_model.flush()
    assert win.chat_view.chat_model.rowCount() == 2
    QTest.keyClicks(win.composer.edit, "!")
    assert b.calls[-1] == ("save_draft", ("durable-1", "still typing!"))


def test_a_new_card_takes_focus_enter_answers_and_esc_denies(make_window: Any, qtbot: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    win.show()
    win.activateWindow()
    qtbot.wait_until(win.isActiveWindow)
    win.open_session("s1")
    b.emit("on_approval_request", "s1", approval("a1", choices=("once", "deny")))
    [card] = win.approvals.findChildren(ApprovalCard)
    # Keyboard first: the first action has focus at once, no Tab hunt.
    qtbot.wait_until(lambda: QApplication.focusWidget() is card.buttons[0])
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is card.buttons[1]  # Deny
    QTest.keyClick(card.buttons[0], Qt.Key.Key_Escape)
    assert b.calls[-1] == ("respond", ("s1", "a1", "deny"))
    # The last card answered: typing goes on in the composer.
    assert QApplication.focusWidget() is win.composer.edit
    b.emit("on_approval_request", "s1", approval("a2", choices=("once", "deny")))
    [card] = win.approvals.findChildren(ApprovalCard)
    qtbot.wait_until(lambda: QApplication.focusWidget() is card.buttons[0])
    QTest.keyClick(card.buttons[0], Qt.Key.Key_Return)
    assert b.calls[-1] == ("respond", ("s1", "a2", "once"))


def test_a_sudo_password_is_typed_masked_and_cleared_when_sent(make_window: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    win.open_session("s1")
    b.emit("on_approval_request", "s1", approval("p1", kind="sudo"))
    [card] = win.approvals.findChildren(ApprovalCard)
    assert card.answer_edit is not None
    assert card.answer_edit.echoMode() is QLineEdit.EchoMode.Password
    QTest.keyClicks(card.answer_edit, "hunter2")
    QTest.keyClick(card.answer_edit, Qt.Key.Key_Return)
    assert b.calls[-1] == ("respond", ("s1", "p1", "hunter2"))
    assert card.answer_edit.text() == ""


def test_a_card_being_answered_survives_another_request_arriving(make_window: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    win.open_session("s1")
    b.emit("on_approval_request", "s1", approval("q1", kind="clarify"))
    [first] = win.approvals.findChildren(ApprovalCard)
    assert first.answer_edit is not None
    QTest.keyClicks(first.answer_edit, "half typed")
    b.emit("on_approval_request", "s1", approval("a1"))
    cards = win.approvals.findChildren(ApprovalCard)
    assert first in cards and first.answer_edit.text() == "half typed"


def test_header_names_the_model_and_the_status_line_is_transient(make_window: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    win.show()
    win.open_session("s1")
    assert not win.model_label.isVisible()
    info = SessionInfo(model="fake-model", provider="custom", activity="processing...")
    b.emit("on_session_info", "s1", info)
    assert win.model_label.isVisible() and win.model_label.text() == "fake-model · custom"
    assert win.activity_label.isVisible() and win.activity_label.text() == "processing..."
    b.emit("on_session_info", "s1", SessionInfo(model="fake-model", provider="custom"))
    assert not win.activity_label.isVisible()  # "" clears it
    b.emit("on_session_info", "s2", SessionInfo(model="other"))  # not on screen
    assert win.model_label.text() == "fake-model · custom"


# The completion popup is a top-level window: the offscreen plugin cannot raise or grab it.
@pytest.mark.qt_log_ignore(
    "does not support raise", "does not support grabbing", "does not support propagateSizeHints"
)
def test_slash_commands_complete_in_the_composer_and_run_on_the_gateway(
    make_window: Any, qtbot: Any
) -> None:
    b = _backend("p1")
    win = make_window(b)
    win.show()
    win.open_session("s1")
    assert ("load_commands", "s1") in b.calls
    b.emit("on_commands", "s1", [("/help", "Show commands"), ("/status", "Session status")])
    edit = win.composer.edit
    edit.setFocus()
    QTest.keyClicks(edit, "/st")
    popup = edit.slash.completer.popup()
    qtbot.wait_until(popup.isVisible)
    QTest.keyClick(popup, Qt.Key.Key_Return)  # takes the highlighted command
    qtbot.wait_until(lambda: edit.toPlainText() == "/status ")
    QTest.keyClick(edit, Qt.Key.Key_Return)
    assert b.calls[-1] == ("run_command", ("s1", "/status"))
    QTest.keyClicks(edit, "/nosuch thing")
    QTest.keyClick(edit, Qt.Key.Key_Return)
    assert b.calls[-1] == ("send", ("s1", "/nosuch thing", ()))  # not a command: a prompt


def test_the_model_menu_switches_the_session_model_where_offered(make_window: Any) -> None:
    b = _backend("p1")
    win = make_window(b)
    win.open_session("s1")
    b.emit("on_session_info", "s1", SessionInfo(model="m1", provider="custom"))
    assert win.model_label.menu() is None  # nothing offered: the name only
    models = [ModelChoice("custom", "Custom", "m1", True), ModelChoice("or", "OpenRouter", "m2")]
    b.emit("on_models", "s1", models)
    menu = win.model_label.menu()
    assert menu is not None
    assert [a.text() for a in menu.actions()] == ["m1  (Custom)", "m2  (OpenRouter)"]
    # The header names the provider as the menu does, whichever name the last info used.
    assert win.model_label.text() == "m1 · Custom"
    b.emit("on_session_info", "s1", SessionInfo(model="m1", provider="custom"))
    assert win.model_label.text() == "m1 · Custom"
    menu.actions()[1].trigger()
    assert b.calls[-1] == ("set_model", ("s1", models[1]))


def test_a_closed_window_stops_listening_to_its_backends(qtbot: Any, make_window: Any) -> None:
    p1, p2 = _backend("p1"), _backend("p2")
    win = make_window(p1, p2)
    win.open_session("s1")
    assert len(p1.listeners) == len(p2.listeners) == 1
    win.close()
    # What the backends say while the app shuts down reaches no closed window.
    assert p1.listeners == p2.listeners == []
    p1.emit("on_message_changed", "s1", assistant("late", "after close"))
    win.chat_view.chat_model.flush()
    assert win.chat_view.chat_model.rowCount() == 2


def test_a_start_lists_every_chat_once_the_window_is_painted(
    qtbot: Any, settings: QSettings
) -> None:
    """A start lists the newest chats until the window is painted, then every chat; the chat
    reopened from the last run is open, listed and selected at once, wherever it is."""
    b = FakeBackend(pid="p1", first_rows=20)
    b.summaries = [SessionSummary(f"s{i}", f"chat {i}", "", 1000.0 - i, 1) for i in range(300)]
    b.messages = {"s150": [user("u1", "far down the list")]}
    settings.setValue("ui/last_session/p1", "s150")
    win = MainWindow([ProfileEntry("P1", ProfileBridge(b))], settings, tray=Tray())
    qtbot.addWidget(win)
    win.resize(900, 600)
    assert win.session_key == "s150"
    assert win.chat_view.chat_model.message_at(0).text == "far down the list"
    assert win.sidebar.selected_key() == "s150"
    assert win.session_model.rowCount() == 151, "down to the reopened chat, before any paint"
    seen: list[object] = []  # the list's rows at each of its paints; "colours" when warmed

    class Paints(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Paint:
                seen.append(win.session_model.rowCount())
            return False

    paints = Paints()
    win.sidebar.session_list.viewport().installEventFilter(paints)
    # Start-up's later work (code colours and links: tens of ms) waits until every chat is
    # on screen.
    bubbles = win.chat_view.bubbles
    warm = bubbles.finish_provisional
    bubbles.finish_provisional = lambda: (seen.append("colours"), warm())  # type: ignore[method-assign]
    with qtbot.waitExposed(win):
        win.show()
    qtbot.waitUntil(lambda: win.session_model.rowCount() == 300 and "colours" in seen)
    assert 300 in seen[: seen.index("colours")], f"paints and the warming in order: {seen}"
    assert win.session_model.keys() == [s.key for s in b.summaries]
    assert win.sidebar.selected_key() == "s150"
    assert win.session_key == "s150"
