"""Chat tabs and the "running now" strip against the scripted backend: keys, marks, restore."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, QSettings, Qt
from PySide6.QtTest import QTest

from desktop.core.models import SessionSummary
from desktop.ui.platform.tray import Tray
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.main_window import MainWindow, ProfileEntry
from desktop.ui.window.tabs import PLACE_SAVE_MS, ChatRef
from tests.ui.fakes import FakeBackend, approval, assistant, user


def _backend(pid: str) -> FakeBackend:
    b = FakeBackend(pid=pid)
    b.summaries = [
        SessionSummary("s1", f"{pid} first", "hello", 1.0, 2),
        SessionSummary("s2", f"{pid} second", "bye", 2.0, 1),
    ]
    b.messages = {
        "s1": [user("u1", "hello"), assistant("a1", f"{pid} says hi")],
        "s2": [user("u2", f"{pid} asks about quokkas")],
    }
    return b


def _texts(win: MainWindow) -> list[str]:
    model = win.chat_view.chat_model
    model.flush()
    return [model.message_at(r).text for r in range(model.rowCount())]


CTRL = Qt.KeyboardModifier.ControlModifier


def _two_tabs(qtbot: Any, make_window: Any) -> tuple[MainWindow, FakeBackend, FakeBackend]:
    """p1's first chat in tab 1, p2's second chat in tab 2 (current)."""
    p1, p2 = _backend("p1"), _backend("p2")
    win = make_window(p1, p2)
    with qtbot.waitActive(win):
        win.activateWindow()
    win.open_session("s1")
    win.tabs.open_in_tab("p2", "s2")
    return win, p1, p2


def test_tabs_hold_chats_of_several_profiles_and_keys_move_between_them(
    qtbot: Any, make_window: Any
) -> None:
    win = _two_tabs(qtbot, make_window)[0]
    assert win.tabs.chats() == [ChatRef("p1", "s1"), ChatRef("p2", "s2")]
    assert win.tabs.bar.isVisible() and win.tabs.bar.count() == 2
    assert (win.profile_id, win.session_key) == ("p2", "s2")
    assert _texts(win) == ["p2 asks about quokkas"]
    win.focus_composer()
    QTest.keyClick(win.composer.edit, Qt.Key.Key_Tab, CTRL)  # round the end: the first tab
    assert (win.profile_id, win.session_key) == ("p1", "s1")
    assert _texts(win) == ["hello", "p1 says hi"]
    assert win.profile_combo.currentData() == "p1", "the chat list shows the tab's profile"
    QTest.keyClick(win.composer.edit, Qt.Key.Key_2, CTRL)
    assert (win.profile_id, win.session_key) == ("p2", "s2")
    QTest.keyClick(win.composer.edit, Qt.Key.Key_1, CTRL)
    assert (win.profile_id, win.session_key) == ("p1", "s1")
    QTest.keyClick(win.composer.edit, Qt.Key.Key_9, CTRL)  # the last tab
    assert (win.profile_id, win.session_key) == ("p2", "s2")
    QTest.keyClick(win.composer.edit, Qt.Key.Key_PageUp, CTRL)
    assert (win.profile_id, win.session_key) == ("p1", "s1")
    QTest.keyClick(win.composer.edit, Qt.Key.Key_Backtab, CTRL | Qt.KeyboardModifier.ShiftModifier)
    assert (win.profile_id, win.session_key) == ("p2", "s2")
    QTest.keyClick(win.composer.edit, Qt.Key.Key_Backtab, CTRL | Qt.KeyboardModifier.ShiftModifier)
    # Choosing another chat in the list shows it in the current tab.
    win.sidebar.select("s2")
    assert win.tabs.chats() == [ChatRef("p1", "s2"), ChatRef("p2", "s2")]
    assert win.tabs.bar.tabText(0) == "p1 second"


def test_choosing_a_profile_goes_to_its_tab(qtbot: Any, make_window: Any) -> None:
    win = _two_tabs(qtbot, make_window)[0]
    win.tabs.open_in_tab("p1", "s2")  # p1's last open chat now, in a third tab...
    win.tabs.close_current()  # ...closed again: p2's chat shows
    assert (win.profile_id, win.session_key) == ("p2", "s2")
    win.profile_combo.setCurrentIndex(win.profile_combo.findData("p1"))
    assert (win.profile_id, win.session_key) == ("p1", "s1"), "p1's tab, not its last chat"
    assert win.tabs.bar.currentIndex() == 0
    assert win.tabs.chats() == [ChatRef("p1", "s1"), ChatRef("p2", "s2")], "no tab replaced"


def test_a_clicked_notification_opens_its_chat_in_a_tab_of_its_own(
    qtbot: Any, make_window: Any
) -> None:
    win = _two_tabs(qtbot, make_window)[0]
    win.tray.chat_requested.emit("p1", "s2")
    assert (win.profile_id, win.session_key) == ("p1", "s2")
    assert win.tabs.chats() == [ChatRef("p1", "s1"), ChatRef("p2", "s2"), ChatRef("p1", "s2")]
    win.tray.chat_requested.emit("p2", "s2")
    assert win.tabs.bar.currentIndex() == 1 and win.tabs.bar.count() == 3


def test_ctrl_t_opens_a_new_chat_in_a_new_tab_and_ctrl_w_closes_it(
    qtbot: Any, make_window: Any
) -> None:
    win, _, p2 = _two_tabs(qtbot, make_window)
    win.focus_composer()
    QTest.keyClick(win.composer.edit, Qt.Key.Key_T, CTRL)
    assert win.tabs.bar.count() == 3 and win.tabs.bar.currentIndex() == 2
    new_key = win.session_key
    assert new_key is not None and ("create_session", new_key) in p2.calls
    assert win.tabs.chats()[2] == ChatRef("p2", new_key)
    assert win.tabs.bar.tabText(2) == "New chat"
    assert win.composer.edit.hasFocus()
    # Ctrl+T again in the empty new chat: no second empty tab.
    QTest.keyClick(win.composer.edit, Qt.Key.Key_T, CTRL)
    assert win.tabs.bar.count() == 3 and win.session_key == new_key
    QTest.keyClick(win.composer.edit, Qt.Key.Key_W, CTRL)
    assert win.tabs.bar.count() == 2
    assert (win.profile_id, win.session_key) == ("p2", "s2"), "the tab left of it shows"
    QTest.keyClick(win.composer.edit, Qt.Key.Key_W, CTRL)
    assert win.tabs.chats() == [ChatRef("p1", "s1")]
    assert (win.profile_id, win.session_key) == ("p1", "s1")
    assert not win.tabs.bar.isVisible(), "one tab: no bar"


def test_middle_click_closes_a_background_tab_and_the_open_chat_stays(
    qtbot: Any, make_window: Any
) -> None:
    win = _two_tabs(qtbot, make_window)[0]
    bar = win.tabs.bar
    center = bar.tabRect(0).center()
    QTest.mouseClick(bar, Qt.MouseButton.MiddleButton, Qt.KeyboardModifier.NoModifier, center)
    assert win.tabs.chats() == [ChatRef("p2", "s2")]
    assert (win.profile_id, win.session_key) == ("p2", "s2")


def test_background_tabs_show_running_waiting_and_unread_and_the_strip_lists_them(
    qtbot: Any, make_window: Any
) -> None:
    win, p1, p2 = _two_tabs(qtbot, make_window)
    strip = win.tabs.strip
    assert not strip.isVisible(), "nothing running: no strip"
    # p1's chat (a background tab, another profile) runs, then asks for approval.
    p1.set_sessions([SessionSummary("s1", "p1 first", running=True), p1.summaries[1]])
    p1.emit("on_running", "s1", True)
    # The tabs follow once the news read together are handled (one refresh for them all).
    qtbot.waitUntil(strip.isVisible)
    assert [b.text() for b in strip.buttons] == ["p1 first"]
    first = strip.buttons[0]
    assert "reply running" in win.tabs.bar.tabToolTip(0)
    assert not win.tabs.bar.tabIcon(0).isNull()
    assert win.tabs.bar.tabIcon(1).isNull(), "the idle chat has no dot"
    p1.emit("on_approval_request", "s1", approval("r1"))
    qtbot.waitUntil(lambda: "a question waiting" in win.tabs.bar.tabToolTip(0))
    assert "a question waiting" in strip.buttons[0].toolTip()
    # Its reply ends unread; p2's other chat starts running: both profiles on the strip.
    p1.emit("on_approval_closed", "s1", "r1")
    p1.set_sessions([SessionSummary("s1", "p1 first", unread=2), p1.summaries[1]])
    p1.emit("on_running", "s1", False)
    p2.set_sessions([p2.summaries[0], SessionSummary("s2", "p2 second")])
    p2.set_sessions([SessionSummary("s1", "p2 first", running=True), p2.summaries[1]])
    qtbot.waitUntil(lambda: win.tabs.bar.tabText(0) == "p1 first (2)")
    assert "2 unread" in win.tabs.bar.tabToolTip(0)
    assert [b.text() for b in strip.buttons] == ["p2 first"]
    assert strip.buttons[0] is first, "the strip's button relabelled, not made anew"
    # One click on the strip: that chat, in a tab of its own.
    strip.buttons[0].click()
    assert (win.profile_id, win.session_key) == ("p2", "s1")
    assert win.tabs.chats()[-1] == ChatRef("p2", "s1") and win.tabs.bar.currentIndex() == 2


def test_strip_click_on_a_chat_in_a_tab_goes_to_that_tab(qtbot: Any, make_window: Any) -> None:
    win, p1, _ = _two_tabs(qtbot, make_window)
    p1.emit("on_approval_request", "s1", approval("r1"))
    qtbot.waitUntil(lambda: [b.text() for b in win.tabs.strip.buttons] == ["p1 first"])
    win.tabs.strip.buttons[0].click()
    assert win.tabs.bar.count() == 2 and win.tabs.bar.currentIndex() == 0
    assert (win.profile_id, win.session_key) == ("p1", "s1")
    assert win.approvals.isVisible(), "its question shows under the chat"


def test_tabs_come_back_at_the_next_start_without_a_chat_that_is_gone(
    qtbot: Any, make_window: Any, settings: QSettings
) -> None:
    win = _two_tabs(qtbot, make_window)[0]
    win.tabs.open_in_tab("p1", "s2")
    QTest.keyClick(win.composer.edit, Qt.Key.Key_2, CTRL)  # p2's chat current
    win.close()
    # Next start: p1's second chat was deleted meanwhile.
    p1b, p2b = _backend("p1"), _backend("p2")
    p1b.summaries = p1b.summaries[:1]
    entries = [ProfileEntry(b.pid.upper(), ProfileBridge(b)) for b in (p1b, p2b)]
    again = MainWindow(entries, settings, tray=Tray())
    qtbot.addWidget(again)
    assert again.tabs.chats() == [ChatRef("p1", "s1"), ChatRef("p2", "s2")]
    assert (again.profile_id, again.session_key) == ("p2", "s2")
    assert _texts(again) == ["p2 asks about quokkas"]
    assert again.tabs.bar.currentIndex() == 1


def test_open_in_new_tab_from_the_list_keeps_the_tabs_chat(qtbot: Any, make_window: Any) -> None:
    win = _two_tabs(qtbot, make_window)[0]
    win.session_list.setFocus()
    # Moving in the list opens s1 in the current tab, Ctrl+Enter moves it to a tab of its own.
    win.sidebar.select("s1")
    assert win.tabs.chats()[1] == ChatRef("p2", "s1")
    QTest.keyClick(win.session_list, Qt.Key.Key_Return, CTRL)
    assert win.tabs.chats() == [ChatRef("p1", "s1"), ChatRef("p2", "s2"), ChatRef("p2", "s1")]
    assert win.tabs.bar.currentIndex() == 2 and win.session_key == "s1"
    actions = [a.text() for a in win.session_list.actions()]
    assert "Open the selected chat in a new tab" in actions


def test_deleting_the_open_chat_closes_its_tab(
    qtbot: Any, make_window: Any, monkeypatch: Any
) -> None:
    win = _two_tabs(qtbot, make_window)[0]
    win.session_list.setFocus()
    QTest.keyClick(win.session_list, Qt.Key.Key_Delete)
    assert win.tabs.chats() == [ChatRef("p1", "s1")]
    assert (win.profile_id, win.session_key) == ("p1", "s1")


@pytest.mark.qt_log_ignore("does not support raise")  # the offscreen platform
def test_a_chat_in_its_own_window_stays_live_and_comes_back_at_the_next_start(
    qtbot: Any, make_window: Any, settings: QSettings
) -> None:
    win, _, p2 = _two_tabs(qtbot, make_window)
    # Right-click-like: s1 of p2 opens in the current tab, then goes to a window of its own.
    win.session_list.setFocus()
    win.sidebar.select("s1")
    QTest.keyClick(win.session_list, Qt.Key.Key_Return, CTRL | Qt.KeyboardModifier.ShiftModifier)
    [popped] = win.popouts.windows
    assert (popped.profile_id, popped.session_key) == ("p2", "s1")
    assert popped.isVisible() and popped.windowTitle() == "p2 first — P2"
    assert win.tabs.chats() == [ChatRef("p1", "s1"), ChatRef("p2", "s2")], "the tab kept s2"
    assert win.session_key == "s2"
    # Its events reach it while the main window shows another chat; they stay out of there.
    reply = assistant("a9", "Streaming into its own window", streaming=True)
    p2.emit("on_message_changed", "s1", reply)
    p2.emit("on_approval_request", "s1", approval("r7"))
    model = popped.chat_view.chat_model
    model.flush()
    assert model.message_at(model.rowCount() - 1).text == "Streaming into its own window"
    assert popped.approvals.isVisible()
    assert "Streaming into its own window" not in _texts(win)
    assert not win.approvals.isVisible()
    # Typed and sent from its own composer: to its chat.
    popped.composer.edit.setFocus()
    QTest.keyClicks(popped.composer.edit, "from the window")
    QTest.keyClick(popped.composer.edit, Qt.Key.Key_Return)
    assert ("send", ("s1", "from the window", ())) in p2.calls
    # The strip's click on it brings that window forward, not a tab.
    p2.emit("on_approval_request", "s1", approval("r8"))
    qtbot.waitUntil(lambda: any(b.text() == "p2 first" for b in win.tabs.strip.buttons))
    [button] = [b for b in win.tabs.strip.buttons if b.text() == "p2 first"]
    button.click()
    assert win.tabs.bar.count() == 2
    win.close()
    assert not win.popouts.windows
    p1b, p2b = _backend("p1"), _backend("p2")
    again = MainWindow(
        [ProfileEntry(b.pid.upper(), ProfileBridge(b)) for b in (p1b, p2b)],
        settings,
        tray=Tray(),
    )
    qtbot.addWidget(again)
    [back] = again.popouts.windows
    assert (back.profile_id, back.session_key) == ("p2", "s1")
    back.close()
    # A chat deleted meanwhile: its window is not opened again, with no error.
    p2c = _backend("p2")
    p2c.summaries = p2c.summaries[1:]
    settings.setValue("ui/chat_windows", '[["p2", "s1", ""]]')
    third = MainWindow([ProfileEntry("P2", ProfileBridge(p2c))], settings, tray=Tray())
    qtbot.addWidget(third)
    assert third.popouts.windows == []


def _top_message(win: Any) -> str:
    """The id of the message at the top of the chat view."""
    view = win.chat_view
    index = view.indexAt(QPoint(view.viewport().width() // 2, 2))
    return view.chat_model.message_at(index.row()).id


def test_each_tab_comes_back_where_it_was_read_and_a_tab_at_the_bottom_follows(
    qtbot: Any, make_window: Any
) -> None:
    p1, p2 = _backend("p1"), _backend("p2")
    p1.messages["s1"] = [
        (user if i % 2 else assistant)(f"m{i}", f"message {i} " + "words " * 40) for i in range(60)
    ]
    win = make_window(p1, p2)
    win.open_session("s1")
    win.tabs.open_in_tab("p2", "s2")
    QTest.keyClick(win.composer.edit, Qt.Key.Key_1, CTRL)
    view = win.chat_view
    view.chat_model.flush()
    view.jump_to_row(20)  # read far up in p1's chat
    bar = view.verticalScrollBar()
    bar.setValue(bar.value() + 7)  # part way into a message
    top = _top_message(win)
    into = -view.visualRect(view.chat_model.index(view.chat_model.row_of(top))).top()
    assert not view.at_bottom and top not in {"m58", "m59"} and into > 0
    QTest.keyClick(win.composer.edit, Qt.Key.Key_2, CTRL)
    assert view.at_bottom, "p2's tab was at its bottom"
    QTest.keyClick(win.composer.edit, Qt.Key.Key_1, CTRL)
    view.chat_model.flush()
    assert _top_message(win) == top, "p1's tab opens where it was read, not at the newest"
    row = view.chat_model.row_of(top)
    assert -view.visualRect(view.chat_model.index(row)).top() == into, "as far into it"
    assert not view.at_bottom
    # Back to p2's tab: at the bottom still, and a new message there is followed.
    QTest.keyClick(win.composer.edit, Qt.Key.Key_2, CTRL)
    assert view.at_bottom
    p2.emit("on_message_changed", "s2", assistant("a7", "a new reply " + "long " * 200))
    view.chat_model.flush()
    qtbot.waitUntil(lambda: bar.value() == bar.maximum())
    assert view.at_bottom


def test_choosing_a_profile_with_no_chats_shows_a_new_chat_tab_for_it(
    qtbot: Any, make_window: Any
) -> None:
    p1, p2, p3 = _backend("p1"), _backend("p2"), FakeBackend(pid="p3")
    win = make_window(p1, p2, p3)
    win.open_session("s1")
    win.tabs.open_in_tab("p2", "s2")
    win.profile_combo.setCurrentIndex(win.profile_combo.findData("p3"))
    assert win.profile_id == "p3" and win.session_key is None and _texts(win) == []
    bar = win.tabs.bar
    assert bar.tabText(bar.currentIndex()) == "New chat (P3)", "the tab says what shows"
    assert win.tabs.chats() == [ChatRef("p1", "s1"), ChatRef("p2", "s2")], "no tab lost"
    # Back to p2's tab and again to the empty one: p3, still no chat.
    QTest.keyClick(win.composer.edit, Qt.Key.Key_2, CTRL)
    assert (win.profile_id, win.session_key) == ("p2", "s2")
    QTest.keyClick(win.composer.edit, Qt.Key.Key_3, CTRL)
    assert win.profile_id == "p3" and win.session_key is None and _texts(win) == []
    # Typed and sent there: the new chat is that tab's.
    win.composer.edit.setFocus()
    QTest.keyClicks(win.composer.edit, "first words")
    QTest.keyClick(win.composer.edit, Qt.Key.Key_Return)
    new_key = win.session_key
    assert new_key is not None and win.tabs.chats()[2] == ChatRef("p3", new_key)
    assert bar.count() == 3 and bar.currentIndex() == 2
    win.tabs.close_current()
    # Another profile chosen from there: its tab; the empty tab goes.
    win.profile_combo.setCurrentIndex(win.profile_combo.findData("p1"))
    assert (win.profile_id, win.session_key) == ("p1", "s1")
    assert bar.count() == 2


@pytest.mark.qt_log_ignore("does not support raise", "does not support grabbing")  # offscreen
def test_a_chat_window_has_find_and_prompt_search(qtbot: Any, make_window: Any) -> None:
    win, _, p2 = _two_tabs(qtbot, make_window)
    p2.messages["s1"] = [user("u1", "where do quokkas live"), assistant("a1", "quokkas: Rottnest")]
    win.popouts.open("p2", "s1")
    [popped] = win.popouts.windows
    popped.activateWindow()
    qtbot.waitUntil(popped.isActiveWindow)  # its keys work in it, as a person's would
    popped.composer.edit.setFocus()
    QTest.keyClick(popped.composer.edit, Qt.Key.Key_F, CTRL)
    assert popped.find_bar.isVisible() and not win.find_bar.isVisible()
    QTest.keyClicks(popped.find_bar.edit, "quokka")
    assert popped.chat_view.matches == [(0, 0), (1, 0)]
    assert "2 of 2" in popped.find_bar.count.text()
    QTest.keyClick(popped.find_bar.edit, Qt.Key.Key_Escape)
    assert not popped.find_bar.isVisible()
    QTest.keyClick(popped.composer.edit, Qt.Key.Key_R, CTRL)
    assert popped.prompt_search.isVisible()
    assert "where do quokkas live" in popped.prompt_search.shown()
    assert not win.prompt_search.isVisible()


def test_a_tab_with_no_chat_left_of_the_current_one_does_not_move_it_at_the_next_start(
    qtbot: Any, make_window: Any, settings: QSettings
) -> None:
    p1, p2, p3 = _backend("p1"), _backend("p2"), FakeBackend(pid="p3")
    win = make_window(p1, p2, p3)
    win.open_session("s1")
    win.tabs.open_in_tab("p2", "s2")
    win.profile_combo.setCurrentIndex(win.profile_combo.findData("p3"))
    win.tabs.bar.moveTab(2, 0)  # the "New chat (P3)" tab dragged to the left end
    QTest.keyClick(win.composer.edit, Qt.Key.Key_3, CTRL)
    assert (win.profile_id, win.session_key) == ("p2", "s2")
    win.close()
    backends = (_backend("p1"), _backend("p2"), FakeBackend(pid="p3"))
    entries = [ProfileEntry(b.pid.upper(), ProfileBridge(b)) for b in backends]
    again = MainWindow(entries, settings, tray=Tray())
    qtbot.addWidget(again)
    assert again.tabs.chats() == [ChatRef("p1", "s1"), ChatRef("p2", "s2")]
    assert (again.profile_id, again.session_key) == ("p2", "s2"), "the tab that was current"


def test_a_reply_starting_and_ending_reads_no_title_markdown_again(
    qtbot: Any, make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tabs and the strip show a markdown title as plain text, worked out once per title:
    a reply's start and end refresh them (twice each), and parsing every title's markdown
    there took milliseconds of the frame that shows the reply's first or last words."""
    from desktop.ui.render import markdown

    p1, p2 = _backend("p1"), _backend("p2")
    p1.summaries[0] = SessionSummary("s1", "Fix the **config** loader", "hello", 1.0, 2)
    win = make_window(p1, p2)
    win.open_session("s1")
    win.tabs.open_in_tab("p2", "s2")
    parsed: list[str] = []
    plain = markdown.plain_text
    monkeypatch.setattr(markdown, "plain_text", lambda t: parsed.append(t) or plain(t))
    for running in (True, False, True, False):
        p1.set_sessions([replace(p1.summaries[0], running=running), p1.summaries[1]])
        p1.emit("on_running", "s1", running)
        # What the user sees: the title without its marks, on the tab and (running) the strip.
        qtbot.waitUntil(
            lambda r=running: (
                [b.text() for b in win.tabs.strip.buttons]
                == (["Fix the config loader"] if r else [])
            )
        )
        assert win.tabs.bar.tabText(0) == "Fix the config loader"
    assert "Fix the **config** loader" not in parsed, "a title's markdown parsed again"


@pytest.mark.qt_log_ignore("does not support raise")  # the offscreen platform
def test_a_chat_moved_to_a_window_takes_its_draft_and_is_never_open_twice(
    qtbot: Any, make_window: Any, settings: QSettings
) -> None:
    win, _, p2 = _two_tabs(qtbot, make_window)
    win.session_list.setFocus()
    win.sidebar.select("s1")  # p2's s1 in the current tab
    edit = win.composer.edit
    QTest.keyClicks(edit, "half a thought")
    for _ in range(3):
        QTest.keyClick(edit, Qt.Key.Key_Left)  # the cursor moved, no text changed
    win.session_list.setFocus()
    QTest.keyClick(win.session_list, Qt.Key.Key_Return, CTRL | Qt.KeyboardModifier.ShiftModifier)
    [popped] = win.popouts.windows
    # The window's message box holds what was typed, the cursor where it was, the keyboard there.
    assert popped.composer.edit.toPlainText() == "half a thought"
    assert popped.composer.edit.textCursor().position() == len("half a thought") - 3
    assert popped.focusWidget() is popped.composer.edit
    assert win.session_key == "s2" and win.composer.edit.toPlainText() == ""
    # Each window tells the core what it shows: both chats are being read.
    assert sorted(p2.viewers.values()) == ["s1", "s2"]
    # Chosen again in the list (a click, Enter, the switcher): its window, not a second copy.
    win.session_list.setFocus()
    win.sidebar.select("s1")
    QTest.keyClick(win.session_list, Qt.Key.Key_Return)
    win.open_session("s1")
    assert win.session_key == "s2", "the main window keeps its chat"
    assert ChatRef("p2", "s1") not in win.tabs.chats()
    assert win.popouts.windows == [popped] and sorted(p2.viewers.values()) == ["s1", "s2"]
    QTest.keyClicks(popped.composer.edit, "!")
    assert p2.drafts["s1"].text == "half a thou!ght"
    win.close()
    # An older run left it in a tab and a window: it comes back in its window only.
    settings.setValue("ui/tabs", '[["p1", "s1"], ["p2", "s1"]]')
    settings.setValue("ui/tab_current", 1)
    again = MainWindow(
        [ProfileEntry(b.pid.upper(), ProfileBridge(b)) for b in (_backend("p1"), p2)],
        settings,
        tray=Tray(),
    )
    qtbot.addWidget(again)
    [back] = again.popouts.windows
    assert (back.profile_id, back.session_key) == ("p2", "s1")
    assert back.composer.edit.toPlainText() == "half a thou!ght"
    assert again.tabs.chats() == [ChatRef("p1", "s1")]
    assert (again.profile_id, again.session_key) == ("p1", "s1")


@pytest.mark.qt_log_ignore("does not support raise")  # the offscreen platform
def test_a_search_hit_in_a_chat_in_its_own_window_is_shown_there(
    qtbot: Any, make_window: Any
) -> None:
    win, _, p2 = _two_tabs(qtbot, make_window)
    p2.messages["s1"] = [
        (user if i % 2 else assistant)(f"m{i}", f"message {i} " + "words " * 40) for i in range(40)
    ]
    p2.messages["s1"][3] = user("m3", "where do wombats sleep")
    win.popouts.open("p2", "s1")
    [popped] = win.popouts.windows
    win.search_box.setFocus()
    QTest.keyClicks(win.search_box, "wombats")
    QTest.keyClick(win.search_box, Qt.Key.Key_Return)
    assert win.session_key == "s2", "the main window keeps its chat"
    assert popped.find_bar.isVisible() and popped.find_bar.query() == "wombats"
    assert "1 of 1" in popped.find_bar.count.text()
    view = popped.chat_view
    model = view.chat_model
    row = next(r for r in range(model.rowCount()) if model.message_at(r).id == "m3")
    assert view.visualRect(model.index(row)).intersects(view.viewport().rect())


def test_each_tab_comes_back_where_it_was_read_after_a_restart_and_its_history_arriving(
    qtbot: Any, make_window: Any, settings: QSettings
) -> None:
    long_chat = [
        (user if i % 2 else assistant)(f"m{i}", f"message {i} " + "words " * 40) for i in range(60)
    ]
    p1, p2 = _backend("p1"), _backend("p2")
    p1.messages["s1"] = list(long_chat)
    win = make_window(p1, p2)
    win.open_session("s1")
    win.tabs.open_in_tab("p2", "s2")
    QTest.keyClick(win.composer.edit, Qt.Key.Key_1, CTRL)
    view = win.chat_view
    view.chat_model.flush()
    view.jump_to_row(20)  # read far up in p1's chat
    bar = view.verticalScrollBar()
    bar.setValue(bar.value() + 7)
    top = _top_message(win)
    QTest.keyClick(win.composer.edit, Qt.Key.Key_2, CTRL)
    win.close()
    # The next start: p2's tab in front; p1's opens where it was read, first from what the
    # app kept, and again once the gateway's history replaces that.
    p1b, p2b = _backend("p1"), _backend("p2")
    p1b.messages["s1"] = list(long_chat)
    again = MainWindow(
        [ProfileEntry(b.pid.upper(), ProfileBridge(b)) for b in (p1b, p2b)], settings, tray=Tray()
    )
    qtbot.addWidget(again)
    again.resize(900, 600)
    with qtbot.waitExposed(again):
        again.show()
    assert again.session_key == "s2" and again.chat_view.at_bottom
    QTest.keyClick(again.composer.edit, Qt.Key.Key_1, CTRL)
    assert _top_message(again) == top and not again.chat_view.at_bottom
    p1b.emit("on_session_messages", "s1", list(long_chat))
    again.chat_view.chat_model.flush()
    assert _top_message(again) == top, "still there once the gateway's history came"
    assert not again.chat_view.at_bottom


def test_where_a_tab_was_read_survives_a_crash_once_the_reading_pauses(
    qtbot: Any,
    make_window: Any,
    settings: QSettings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reading places are written to disk a moment after the scrolling stops, once per
    pause (not per scroll step): after a crash (no close, so no save at close) the tab's chat
    comes back where it was read."""
    long_chat = [
        (user if i % 2 else assistant)(f"m{i}", f"message {i} " + "words " * 40) for i in range(60)
    ]
    p1, p2 = _backend("p1"), _backend("p2")
    p1.messages["s1"] = list(long_chat)
    win = make_window(p1, p2)
    win.open_session("s1")
    win.tabs.open_in_tab("p2", "s2")
    QTest.keyClick(win.composer.edit, Qt.Key.Key_1, CTRL)
    timer = win.tabs.place_timer
    assert timer.interval() == PLACE_SAVE_MS
    timer.setInterval(1)  # the pause, without waiting on wall time
    writes: list[str] = []
    set_value = settings.setValue

    def counted(key: str, value: Any) -> None:
        if key == "ui/tab_places":
            writes.append(key)
        set_value(key, value)

    monkeypatch.setattr(settings, "setValue", counted)
    view = win.chat_view
    view.chat_model.flush()
    view.jump_to_row(20)  # read far up in p1's chat...
    bar = view.verticalScrollBar()
    for _ in range(10):  # ...scrolling on, step by step
        bar.setValue(bar.value() + 7)
    top = _top_message(win)
    into = -view.visualRect(view.chat_model.index(view.chat_model.row_of(top))).top()
    assert not view.at_bottom and top not in {"m58", "m59"} and into > 0
    assert writes == [], "nothing written while the scrolling goes on"
    qtbot.waitUntil(lambda: bool(writes))
    assert writes == ["ui/tab_places"], "one write for the pause, not one per scroll step"
    assert not timer.isActive()
    # The crash: only what is on disk now survives; the first window is never closed.
    crashed = tmp_path / "crashed.ini"
    shutil.copy(settings.fileName(), crashed)
    p1b, p2b = _backend("p1"), _backend("p2")
    p1b.messages["s1"] = list(long_chat)
    again = MainWindow(
        [ProfileEntry(b.pid.upper(), ProfileBridge(b)) for b in (p1b, p2b)],
        QSettings(str(crashed), QSettings.Format.IniFormat),
        tray=Tray(),
    )
    qtbot.addWidget(again)
    again.resize(900, 600)
    with qtbot.waitExposed(again):
        again.show()
    assert again.tabs.chats() == [ChatRef("p1", "s1"), ChatRef("p2", "s2")]
    assert again.session_key == "s1"
    again.chat_view.chat_model.flush()
    assert _top_message(again) == top, "p1's chat opens where it was read, not at the newest"
    row = again.chat_view.chat_model.row_of(top)
    assert -again.chat_view.visualRect(again.chat_view.chat_model.index(row)).top() == into
    assert not again.chat_view.at_bottom


def test_twenty_chats_starting_together_refresh_the_tabs_once_and_set_no_title_again(
    qtbot: Any, make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """20 chats streaming at once start and end a turn every few milliseconds; each start was a
    refresh of every tab and of the strip, and every refresh set every tab's text again (a tab
    bar lays itself out at each setTabText): the window froze for 1.5 s at a time. Now the news
    read together refresh once, and only what changed is set."""
    from desktop.ui.window.running import RunningStrip

    p1 = _backend("p1")
    p1.summaries = [SessionSummary(f"c{k:02d}", f"chat {k}", "hi", float(k), 1) for k in range(20)]
    p1.messages = {s.key: [user(f"u{s.key}", "hi")] for s in p1.summaries}
    win = make_window(p1)
    win.open_session("c00")
    for s in p1.summaries[1:]:
        win.tabs.open_in_tab("p1", s.key)
    bar, strip = win.tabs.bar, win.tabs.strip
    qtbot.waitUntil(lambda: bar.count() == 20 and not strip.isVisible())
    texts = [bar.tabText(i) for i in range(20)]
    made: list[str] = []  # the strip's buttons labelled, each with a chat
    label = RunningStrip._label
    monkeypatch.setattr(
        RunningStrip, "_label", lambda s, b, st: made.append(st.key) or label(s, b, st)
    )
    titled: list[int] = []
    set_text = bar.setTabText
    monkeypatch.setattr(bar, "setTabText", lambda i, t: titled.append(i) or set_text(i, t))
    running = [replace(s, running=True) for s in p1.summaries]
    for k, s in enumerate(p1.summaries):  # every chat's turn starts, read in one go
        p1.set_sessions(running[: k + 1] + p1.summaries[k + 1 :])
        p1.emit("on_running", s.key, True)
    qtbot.waitUntil(lambda: strip.more_label.text() == "and 14 more")
    # What the user sees: every tab with its dot, the strip listing six and counting the rest.
    assert all(not bar.tabIcon(i).isNull() for i in range(20))
    assert [bar.tabText(i) for i in range(20)] == texts
    assert len(strip.buttons) == 6
    assert len(made) == 6, f"the strip was redone for every chat's start: {len(made)} buttons"
    assert titled == [], f"unchanged tab texts set again: {len(titled)}"


def test_a_turn_starting_among_ten_thousand_chats_refreshes_the_strip_from_the_busy_ones(
    qtbot: Any, make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tabs and the running strip are refreshed at every turn's start and end: each
    refresh took the whole session list (a summary per chat, sorted) to find the few busy
    ones, ~40 ms with 10,000 chats; now the backend names those."""
    p1 = _backend("p1")
    p1.summaries = [SessionSummary(f"c{k:05d}", f"chat {k}", "", float(k)) for k in range(10_000)]
    win = make_window(p1)
    win.open_session("c09999")
    qtbot.waitUntil(lambda: win.session_key == "c09999")
    whole: list[int] = []  # the whole list asked for, from here on
    sessions = p1.sessions
    monkeypatch.setattr(p1, "sessions", lambda: whole.append(1) or sessions())
    p1.summaries[3] = replace(p1.summaries[3], running=True)
    p1.emit("on_running", "c00003", True)
    strip = win.tabs.strip
    qtbot.waitUntil(strip.isVisible)
    assert [b.text() for b in strip.buttons] == ["chat 3"]
    assert "reply running" in strip.buttons[0].toolTip()
    assert whole == [], f"the whole list was asked for {len(whole)} times"
