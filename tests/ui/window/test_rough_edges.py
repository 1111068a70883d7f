"""The rough edges of a first hour (issue #27), each driven through the real widgets."""

from __future__ import annotations

import collections
import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtGui import QColor, QInputMethodEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QFileDialog, QInputDialog, QLineEdit, QMessageBox

from desktop.core.models import ConnectionState, ConnectionStatus, SessionInfo, SessionSummary
from desktop.ui.theme import ThemeManager, ThemeMode
from desktop.ui.window.chat_admin import Dialogs
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


def test_file_dialogs_open_at_home_then_where_last_used_and_export_names_are_plain(
    make_window: Any, monkeypatch: Any, tmp_path: Path
) -> None:
    home, docs, out, elsewhere = (tmp_path / d for d in ("home", "docs", "out", "cwd"))
    for d in (home, docs, out, elsewhere):
        d.mkdir()
    (docs / "a.txt").write_text("hi", "utf-8")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(elsewhere)
    opened: list[tuple[str, str]] = []

    def open_names(parent: Any, caption: str = "", folder: str = "", *a: Any) -> Any:
        opened.append(("attach", folder))
        return [str(docs / "a.txt")], ""

    def save_name(parent: Any, caption: str = "", suggested: str = "", *a: Any) -> Any:
        opened.append(("export", suggested))
        return str(out / "bananas.md"), ""

    monkeypatch.setattr(QFileDialog, "getOpenFileNames", staticmethod(open_names))
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(save_name))
    b = _backend()
    b.summaries[0] = SessionSummary("s1", "Bananas _renamed_: a/b?", "tiles", 3.0, 2)
    win = make_window(b)
    win.open_session("s1")
    win.composer.attach_button.click()
    win.composer.attach_button.click()
    win.actions_by_name["export_session"].trigger()
    win.actions_by_name["export_session"].trigger()
    assert opened == [
        ("attach", str(home)),
        ("attach", str(docs)),
        ("export", str(home / "Bananas renamed a b.md")),
        ("export", str(out / "Bananas renamed a b.md")),
    ]
    win.close()
    again = make_window(_backend())
    opened.clear()
    again.composer.attach_button.click()
    assert opened == [("attach", str(docs))], "remembered across a restart"


def test_f1_shows_both_columns_whole(make_window: Any, qtbot: Any, monkeypatch: Any) -> None:
    win = make_window(_backend())
    seen: list[Any] = []

    def run(cls: Any, dialog: Any) -> int:
        dialog.show()
        qtbot.waitExposed(dialog)
        seen.append(dialog)
        return 0

    monkeypatch.setattr(Dialogs, "run", classmethod(run))
    win.actions_by_name["shortcuts"].trigger()
    table = seen[0].table
    fm = table.fontMetrics()
    widest_keys = max(fm.horizontalAdvance(keys) for _, keys in seen[0].rows())
    assert table.columnWidth(1) >= widest_keys + 8, "the Keys column is not cut off"
    assert table.horizontalHeader().length() <= table.viewport().width()
    seen[0].close()


@pytest.mark.qt_log_ignore(
    "does not support raise", "does not support grabbing", "does not support propagateSizeHints"
)
def test_switcher_highlights_the_row_enter_opens(make_window: Any, qtbot: Any) -> None:
    win = make_window(_backend())
    win.open_session("s1")
    QTest.keyClick(win.composer.edit, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    sw = win.switcher
    qtbot.waitExposed(sw)
    assert sw.list.selectionModel().isSelected(sw.proxy.index(0, 0)), "a highlighted row"
    QTest.keyClicks(sw.query, "a")  # Animals, Garden
    assert sw.list.currentIndex().data(Qt.ItemDataRole.DisplayRole) == "Animals"
    assert sw.list.selectionModel().isSelected(sw.list.currentIndex())
    QTest.keyClick(sw.query, Qt.Key.Key_Down)
    assert sw.list.currentIndex().data(Qt.ItemDataRole.DisplayRole) == "Garden"
    QTest.keyClick(sw.query, Qt.Key.Key_Return)
    assert win.session_key == "s3", "Enter opens the highlighted row"


def test_rename_is_wide_enough_and_delete_asks_nothing(make_window: Any, monkeypatch: Any) -> None:
    b = _backend()
    long_title = "Planning the kitchen renovation: tiles, grout colours and the budget"
    b.summaries[0] = SessionSummary("s1", long_title, "tiles", 3.0, 2)
    win = make_window(b)
    win.open_session("s1")
    seen: list[Any] = []

    def run(cls: Any, dialog: Any) -> int:
        dialog.show()
        seen.append(dialog)
        if isinstance(dialog, QInputDialog):
            edit = dialog.findChild(QLineEdit)
            assert edit.fontMetrics().horizontalAdvance(long_title) < edit.width()
            dialog.setTextValue("Kitchen")
            return 1
        box = dialog
        assert box.icon() == QMessageBox.Icon.NoIcon and box.iconPixmap().isNull()
        names = sorted(btn.text() for btn in box.buttons())
        assert names == ["&Cancel", "Delete"] or names == ["Cancel", "Delete"]
        assert box.defaultButton().text().lstrip("&") == "Cancel"
        delete = next(btn for btn in box.buttons() if btn.text() == "Delete")
        delete.click()
        return 0

    monkeypatch.setattr(Dialogs, "run", classmethod(run))
    win.session_list.setFocus()
    win.actions_by_name["rename_session"].trigger()
    assert b.calls[-1] == ("rename_session", ("s1", "Kitchen"))
    # Delete asks nothing now: it is undoable (tests/ui/test_e2e_organise.py), then told.
    win.actions_by_name["delete_session"].trigger()
    win.chat_admin.undo.timer.timeout.emit()
    assert b.calls[-1] == ("delete_session", "s1")
    assert len(seen) == 1


@pytest.mark.parametrize("width", [683, 500])
def test_half_screen_widths_clip_nothing_in_the_header(
    make_window: Any, qtbot: Any, width: int
) -> None:
    b = _backend()
    win = make_window(b)
    win.open_session("s1")
    win.resize(width, 600)
    QCoreApplication.processEvents()
    header = win.header
    assert win.width() >= win.minimumWidth() > 0, "a minimum size exists"
    conn = header.connection
    for button in (conn.pause_button, conn.details_button):
        if button.isVisible():
            assert button.width() >= button.sizeHint().width(), button.text()
            right = button.mapTo(win, button.rect().topRight()).x()
            assert right <= win.width(), f"{button.text()} is inside the window"
    assert header.mapTo(win, header.rect().topRight()).x() <= win.width()


def test_ctrl_b_collapses_the_sidebar_and_it_is_remembered(
    make_window: Any, settings: Any, qtbot: Any
) -> None:
    win = make_window(_backend())
    win.open_session("s1")
    pane_before = win.pane.width()
    QTest.keyClick(win.composer.edit, Qt.Key.Key_B, Qt.KeyboardModifier.ControlModifier)
    QCoreApplication.processEvents()
    assert not win.sidebar.isVisible()
    assert win.pane.width() > pane_before, "the chat takes the room"
    assert not win.header.sidebar_button.isChecked()
    win.close()
    again = make_window(_backend())
    assert not again.sidebar.isVisible(), "still collapsed after a restart"
    again.header.sidebar_button.click()
    assert again.sidebar.isVisible()


@pytest.fixture
def styled(qapp: Any, mode: ThemeMode) -> Any:
    """The theme of the test's `mode` parameter, for the test's length."""
    before = qapp.styleSheet()
    manager = ThemeManager(qapp, mode)
    yield manager
    qapp.setStyleSheet(before)


@pytest.mark.parametrize("mode", [ThemeMode.LIGHT])
def test_keyboard_focus_shows_on_the_lists_and_the_composer_buttons(
    make_window: Any, qtbot: Any, styled: Any
) -> None:
    win = make_window(_backend())
    win.open_session("s1")
    QTest.keyClicks(win.composer.edit, "x")  # Send enabled
    c = win.composer
    for widget in (win.session_list, win.chat_view, c.attach_button, c.send_button):
        win.search_box.setFocus(Qt.FocusReason.TabFocusReason)
        QCoreApplication.processEvents()
        plain = widget.grab().toImage()
        widget.setFocus(Qt.FocusReason.TabFocusReason)
        QCoreApplication.processEvents()
        assert widget.hasFocus()
        ringed = widget.grab().toImage()
        assert plain.size() == ringed.size()
        assert plain != ringed, f"{widget.accessibleName()} shows that it has the keyboard"


def test_ctrl_plus_minus_zero_size_the_chat_and_the_message_box_and_are_remembered(
    make_window: Any, qtbot: Any
) -> None:
    b = _backend()
    b.messages["s1"] = [
        (user if i % 2 else assistant)(f"m{i}", f"message {i} about tiles " * (1 + i % 9))
        for i in range(60)
    ]
    win = make_window(b)
    win.open_session("s1")
    view = win.chat_view
    base = view.font().pointSizeF()
    newest = view.chat_model.index(59)
    qtbot.wait_until(lambda: view.visualRect(newest).height() > 0)
    QCoreApplication.processEvents()
    height = view.visualRect(newest).height()
    win.composer.edit.setPlainText("one\ntwo\nthree")
    box = win.composer.edit.height()
    win.composer.edit.setFocus()
    QTest.keyClick(win.composer.edit, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    QTest.keyClick(win.composer.edit, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    assert view.font().pointSizeF() > base * 1.15
    assert win.composer.edit.font().pointSizeF() == view.font().pointSizeF()
    assert win.composer.edit.height() > box, "the message box grows with its text"
    assert win.composer.edit.toPlainText() == "one\ntwo\nthree", "Ctrl+= typed nothing"
    QCoreApplication.processEvents()
    # Every cached height was dropped: the rows on screen are as tall as the new size draws
    # them, and the newest message still ends at the bottom.
    assert view.visualRect(newest).height() > height
    view.viewport().repaint()
    on_screen = [
        view.chat_model.index(r)
        for r in range(60)
        if view.visualRect(view.chat_model.index(r)).intersects(view.viewport().rect())
    ]
    assert len(on_screen) >= 2
    for index in on_screen:
        assert view.visualRect(index).height() == view.bubbles.measure(index)
    assert view.visualRect(newest).bottom() <= view.viewport().height()
    assert view.at_bottom
    win.close()
    again = make_window(_backend())
    assert again.chat_view.font().pointSizeF() == view.font().pointSizeF(), "remembered"
    assert again.composer.edit.font().pointSizeF() == view.font().pointSizeF()
    QTest.keyClick(again.composer.edit, Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier)
    assert again.chat_view.font().pointSizeF() == base
    QTest.keyClick(again.composer.edit, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    assert again.chat_view.font().pointSizeF() < base
    assert again.composer.edit.font().pointSizeF() < base


def _contrast(a: QColor, b: QColor) -> float:
    def luminance(c: QColor) -> float:
        def lin(v: float) -> float:
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

        return 0.2126 * lin(c.redF()) + 0.7152 * lin(c.greenF()) + 0.0722 * lin(c.blueF())

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.qt_log_ignore(
    "does not support raise", "does not support grabbing", "does not support propagateSizeHints"
)  # offscreen
@pytest.mark.parametrize("mode", [ThemeMode.LIGHT, ThemeMode.DARK])
def test_the_profile_list_names_every_profile_readably(
    make_window: Any, qtbot: Any, styled: Any, mode: ThemeMode
) -> None:
    win = make_window(FakeBackend(pid="p1"), FakeBackend(pid="p2"))
    combo = win.sidebar.profile_combo
    combo.showPopup()
    view = combo.view()
    qtbot.waitUntil(view.isVisible)
    image = view.grab().toImage()
    for row in range(combo.count()):
        rect = view.visualRect(view.model().index(row, 0)).adjusted(2, 2, -2, -2)
        seen = _colours(image, rect)
        ground = QColor(max(seen, key=lambda name: seen[name]))
        ink = max(_contrast(QColor(name), ground) for name in seen)
        # WCAG AA for text: the current profile's name was white on a near-white row.
        assert ink >= 4.5, f"{combo.itemText(row)!r}: contrast {ink:.1f}"
    combo.hidePopup()


def _colours(image: Any, rect: Any, step: int = 1) -> collections.Counter[str]:
    """How many pixels of each colour `rect` of `image` holds (every `step`-th row and column)."""
    right, bottom = min(rect.right(), image.width()), min(rect.bottom(), image.height())
    return collections.Counter(
        image.pixelColor(x, y).name()
        for x in range(rect.left(), right, step)
        for y in range(rect.top(), bottom, step)
    )


def _reconnecting(b: FakeBackend) -> None:
    now = time.time()
    b.emit(
        "on_status",
        ConnectionStatus(
            ConnectionState.RECONNECTING, 1, 1, retry_at=time.monotonic() + 9, last_connected_at=now
        ),
    )


def _online(b: FakeBackend) -> None:
    b.emit(
        "on_status", ConnectionStatus(ConnectionState.ONLINE, 1, 1, last_connected_at=time.time())
    )


def _whole(win: Any, *buttons: Any) -> None:
    for button in buttons:
        assert button.isVisible() and button.width() >= button.sizeHint().width(), button.text()
        assert button.mapTo(win, button.rect().topRight()).x() <= win.width(), button.text()


@pytest.mark.parametrize("mode", [ThemeMode.LIGHT, ThemeMode.DARK])
@pytest.mark.parametrize(
    "model", ["fake-model", "anthropic/claude-3-5-sonnet-20241022"], ids=["short", "long"]
)
def test_reconnecting_leaves_the_chat_list_as_wide_as_it_was(
    make_window: Any, styled: Any, model: str, mode: ThemeMode
) -> None:
    b = _backend()
    win = make_window(b)
    win.resize(1040, 700)  # the window's first size
    win.open_session("s1")
    info = SessionInfo(model=model, provider="openrouter", context_percent=2, auto_approve=False)
    b.emit("on_session_info", "s1", info)
    _online(b)
    QCoreApplication.processEvents()
    side = win.sidebar.width()
    conn = win.header.connection
    _whole(win, conn.pause_button, conn.details_button)
    _reconnecting(b)
    QCoreApplication.processEvents()
    # The header gained "last connected just now" and Reconnect: what gives way is text of
    # its own (elided, whole in tooltips), never the chat list, a button or the state's words.
    assert win.sidebar.width() == side
    _whole(win, conn.reconnect_button, conn.pause_button, conn.details_button)
    words = conn.label.text()
    assert words.startswith("Reconnecting in ")
    assert conn.label.toolTip() == "", f"{words!r} is cut short"  # its tooltip when it is
    assert model in win.header.model_label.toolTip()
    _online(b)
    QCoreApplication.processEvents()
    assert win.sidebar.width() == side


def _bar_colours(win: Any) -> set[str]:
    bar = win.chat_view.verticalScrollBar()
    image = bar.grab().toImage()
    return {
        image.pixelColor(x, y).name()
        for x in range(2, image.width() - 2)
        for y in range(2, image.height() - 2, 3)
    }


@pytest.mark.parametrize("mode", [ThemeMode.LIGHT, ThemeMode.DARK])
def test_the_chat_s_scroll_bar_shows_a_handle_only_when_there_is_more_to_see(
    make_window: Any, styled: Any, mode: ThemeMode
) -> None:
    """The bar is always there (rows keep their width), but an empty or short chat showed a
    handle the whole height of its track, as if all of a long chat were on screen."""
    b = _backend()
    b.messages["s4"] = [
        user(f"u{i}", f"question {i}") if i % 2 else assistant(f"a{i}", f"answer {i}")
        for i in range(60)
    ]
    b.summaries.append(SessionSummary("s4", "Long", "answer", 0.5, 60))
    win = make_window(b)
    win.resize(1040, 700)
    win.open_session("s1")
    QCoreApplication.processEvents()
    bar = win.chat_view.verticalScrollBar()
    assert bar.isVisible() and bar.maximum() == 0
    assert len(_bar_colours(win)) == 1, "a short chat's bar shows a handle"
    win.open_session("s4")
    QCoreApplication.processEvents()
    assert bar.maximum() > 0
    assert len(_bar_colours(win)) > 1, "a long chat's bar shows no handle"
    win.open_session("s1")
    QCoreApplication.processEvents()
    assert len(_bar_colours(win)) == 1


@pytest.mark.parametrize("mode", [ThemeMode.LIGHT])
def test_a_short_header_shortens_the_title_no_more_than_the_model_name(
    make_window: Any, styled: Any, mode: ThemeMode
) -> None:
    """At the window's first size the title read "Kitchen …" beside a whole "fake-model ·
    Custom endpoint": Qt squeezes a stretched item to its minimum before it shortens others."""
    b = _backend()
    win = make_window(b)
    win.resize(1040, 700)
    win.open_session("s1")
    win.header.set_title("Kitchen tiles for the bathroom floor")
    info = SessionInfo(model="fake-model", provider="Custom endpoint", context_percent=2)
    b.emit("on_session_info", "s1", info)
    _online(b)
    QCoreApplication.processEvents()
    title, model = win.header.title_label, win.header.model_label
    title_cut = title.sizeHint().width() - title.width()
    model_cut = model.sizeHint().width() - model.width()
    assert title_cut > 0, "the header is short at this width (else the test shows nothing)"
    assert title_cut <= model_cut + 1, f"title cut by {title_cut} px, model by {model_cut}"


@pytest.mark.parametrize("mode", [ThemeMode.LIGHT])
def test_the_model_name_keeps_room_for_a_menu_arrow_only_when_it_has_a_menu(
    make_window: Any, styled: Any, mode: ThemeMode
) -> None:
    from desktop.core.models import ModelChoice

    b = _backend()
    win = make_window(b)
    win.open_session("s1")
    b.emit("on_session_info", "s1", SessionInfo(model="fake-model", provider="custom"))
    model = win.header.model_label
    assert model.menu() is None
    plain = model.sizeHint().width()
    choices = [ModelChoice("custom", "Custom", "fake-model", True), ModelChoice("c", "C", "m2")]
    b.emit("on_models", "s1", choices)
    assert model.menu() is not None and model.text() == "fake-model · Custom"
    b.emit("on_models", "s1", [])
    b.emit("on_session_info", "s1", SessionInfo(model="fake-model", provider="Custom"))
    assert model.menu() is None and model.sizeHint().width() < plain + 20
    plain = model.sizeHint().width()  # the same text as with the menu
    b.emit("on_models", "s1", choices)
    with_menu = model.sizeHint().width()
    assert with_menu - plain >= 10, f"{plain} px without a menu, {with_menu} px with one"


@pytest.mark.parametrize("mode", [ThemeMode.LIGHT, ThemeMode.DARK])
def test_a_notice_under_the_header_stands_out_from_the_chat(
    make_window: Any, styled: Any, mode: ThemeMode
) -> None:
    """It was a line of text on the chat's own background, read as part of the chat."""
    b = _backend()
    win = make_window(b)
    win.resize(1040, 500)
    win.open_session("s1")
    b.emit("on_notice", "s1", "Not connected: the reply is stopped as soon as it is back")
    QCoreApplication.processEvents()
    label = win.notice_label
    assert label.isVisible()

    def ground(image: Any) -> str:
        seen = _colours(image, image.rect(), step=2)
        return max(seen, key=lambda name: seen[name])

    shot = win.grab()  # as the window shows them, each over what lies under it
    at = label.mapTo(win, label.rect().topLeft())
    notice = shot.copy(at.x() + 16, at.y() + 10, label.width() - 32, label.height() - 12)
    view = win.chat_view.viewport()
    where = view.mapTo(win, view.rect().topLeft())
    chat = shot.copy(where.x(), where.y(), view.width(), view.height())
    assert ground(notice.toImage()) != ground(chat.toImage()), "no ground of its own"
