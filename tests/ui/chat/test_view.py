"""Chat view: virtualisation, bubbles' buttons, copy, links, remote images, auto-scroll."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QPoint, Qt, QUrl
from PySide6.QtGui import QColor, QGuiApplication
from PySide6.QtTest import QTest

from desktop.core.models import ChatMessage, DeliveryState, Role, ToolCall
from desktop.ui.chat.view import ChatView
from desktop.ui.render.document import SafeDocument
from desktop.ui.render.links import LinkOpener
from desktop.ui.render.markdown import render_markdown
from tests.ui.fakes import assistant, laid_out, user


def _shown_view(qtbot: Any, *, at_start: bool = False) -> ChatView:
    v = ChatView(at_start=at_start)
    qtbot.addWidget(v)
    v.resize(640, 480)
    with qtbot.waitExposed(v):
        v.show()
    return v


@pytest.fixture
def view(qtbot: Any) -> ChatView:
    return _shown_view(qtbot)


@pytest.fixture
def view_at_start(qtbot: Any) -> ChatView:
    """A view as the app's window shows it at start-up (see ChatView), never finished here."""
    return _shown_view(qtbot, at_start=True)


def _settle(qtbot: Any, v: ChatView) -> None:
    """Wait until measured heights are published and the layout is stable."""
    qtbot.wait_until(lambda: not v.bubbles._resize_timer.isActive())
    QCoreApplication.processEvents()  # let the delayed relayout run
    qtbot.wait_until(lambda: not v.bubbles._resize_timer.isActive())


def _click(qtbot: Any, v: ChatView, row: int, kind: str, n: int = 0) -> None:
    index = v.chat_model.index(row)
    rect = v.visualRect(index)
    center = v.bubbles.zone_center(index, kind, n)
    assert center is not None, f"no {kind} zone in row {row}"
    pos = QPoint(int(rect.left() + center.x()), int(rect.top() + center.y()))
    QTest.mouseClick(v.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pos)


def test_ten_thousand_messages_lay_out_only_visible_rows(qtbot: Any, view: ChatView) -> None:
    msgs = [
        (user if i % 2 else assistant)(str(i), f"message number {i} " * (1 + i % 5))
        for i in range(10_000)
    ]
    view.show_messages(msgs)
    _settle(qtbot, view)
    visible = {
        r
        for r in range(9_900, 10_000)
        if view.visualRect(view.chat_model.index(r)).intersects(view.viewport().rect())
    }
    assert 9_999 in visible, "opened at the newest message"
    assert view.bubbles.layouts_built < 60
    assert view.bubbles.painted_rows <= set(range(9_950, 10_000))
    view.bubbles.painted_rows.clear()
    bar = view.verticalScrollBar()
    bar.setValue(bar.maximum() // 2)
    qtbot.wait_until(lambda: bool(view.bubbles.painted_rows))
    _settle(qtbot, view)
    rows = view.bubbles.painted_rows
    assert max(rows) - min(rows) < 40, "only a screenful of rows painted"
    assert 3_000 < min(rows) < 7_000
    assert view.bubbles.layouts_built < 120


def test_streaming_repaints_per_frame_not_per_delta(qtbot: Any, view: ChatView) -> None:
    reply = assistant("a1", "", streaming=True)
    view.show_messages([user("u1", "hi"), reply])
    _settle(qtbot, view)
    before = view.bubbles.paints
    with qtbot.wait_signal(view.chat_model.flushed):
        for i in range(200):
            reply.text += f"tok{i} "
            view.update_message(reply)
    qtbot.wait_until(lambda: view.bubbles.paints > before)
    _settle(qtbot, view)
    assert view.bubbles.paints - before < 20
    assert view.chat_model.message_at(1).text.endswith("tok199 ")


def test_failed_message_offers_retry_edit_discard(qtbot: Any, view: ChatView) -> None:
    failed = user("u1", "send me", DeliveryState.FAILED)
    view.show_messages([failed, user("u2", "ok", DeliveryState.PENDING)])
    _settle(qtbot, view)
    pending_index = view.chat_model.index(1)
    assert view.bubbles.zone_center(pending_index, "retry") is None
    for kind in ("retry", "edit", "discard"):
        with qtbot.wait_signal(view.action_requested) as blocker:
            _click(qtbot, view, 0, kind)
        assert blocker.args == [kind, "u1"]


def test_unconfirmed_message_has_no_retry(qtbot: Any, view: ChatView) -> None:
    view.show_messages([user("u1", "maybe", DeliveryState.UNCONFIRMED)])
    _settle(qtbot, view)
    assert view.bubbles.zone_center(view.chat_model.index(0), "retry") is None


def test_code_block_copy_button_copies_that_block(qtbot: Any, view: ChatView) -> None:
    text = "Two blocks:\n\n```python\nprint('one')\n```\n\nand\n\n```\nsecond block\n```\n"
    view.show_messages([assistant("a1", text)])
    _settle(qtbot, view)
    QGuiApplication.clipboard().setText("")
    with qtbot.wait_signal(view.code_copied):
        _click(qtbot, view, 0, "copy", 1)
    assert QGuiApplication.clipboard().text() == "second block"
    _click(qtbot, view, 0, "copy", 0)
    assert QGuiApplication.clipboard().text() == "print('one')"


def test_thinking_collapsed_until_clicked(qtbot: Any, view: ChatView) -> None:
    msg = assistant("a1", "answer", thinking="secret chain of thought " * 20)
    view.show_messages([msg])
    _settle(qtbot, view)
    index = view.chat_model.index(0)
    collapsed = view.visualRect(index).height()
    assert view.bubbles.layout_for(index).thinking_doc is None
    _click(qtbot, view, 0, "thinking")
    _settle(qtbot, view)
    qtbot.wait_until(lambda: view.visualRect(index).height() > collapsed + 40)
    assert view.bubbles.layout_for(index).thinking_doc is not None


def test_tool_card_expands_to_show_output(qtbot: Any, view: ChatView) -> None:
    msg = assistant("a1", "done")
    msg.tools = [ToolCall("t1", "shell", "ls", "file-a\nfile-b\nfile-c", done=True)]
    view.show_messages([msg])
    _settle(qtbot, view)
    index = view.chat_model.index(0)
    assert view.bubbles.layout_for(index).tool_cards[0][1] is None
    _click(qtbot, view, 0, "tool", 0)
    body = view.bubbles.layout_for(index).tool_cards[0][1]
    assert body is not None and "file-c" in body.toPlainText()


def test_links_open_only_on_click_and_only_safe_schemes(
    qtbot: Any, view: ChatView, monkeypatch: Any
) -> None:
    opened: list[str] = []
    monkeypatch.setattr(
        LinkOpener,
        "open_external",
        classmethod(lambda cls, url: opened.append(url.toString()) or True),
    )
    view.show_messages([assistant("a1", "[docs](https://example.org/docs)")])
    _settle(qtbot, view)
    assert opened == []
    index = view.chat_model.index(0)
    lay = view.bubbles.layout_for(index)
    assert lay.doc is not None
    rect = view.visualRect(index)
    cursor_rect = lay.doc.documentLayout().blockBoundingRect(lay.doc.begin())
    pos = QPoint(
        int(rect.left() + lay.doc_pos.x() + 6),
        int(rect.top() + lay.doc_pos.y() + cursor_rect.height() / 2),
    )
    QTest.mouseMove(view.viewport(), pos)
    assert opened == [], "hovering must not open"
    QTest.mouseClick(
        view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pos
    )
    assert opened == ["https://example.org/docs"]
    assert LinkOpener.open("javascript:alert(1)") is False
    assert LinkOpener.open("file:///etc/passwd") is False
    assert opened == ["https://example.org/docs"]


def test_remote_images_are_never_fetched() -> None:
    html = render_markdown("![x](https://tracker.example/pixel.png)")
    assert "<img" not in html
    assert "https://tracker.example/pixel.png" in html
    doc = SafeDocument()
    doc.setHtml('<img src="https://tracker.example/pixel.png">')
    doc.setTextWidth(300)
    doc.size()
    assert doc.loadResource(2, QUrl("https://tracker.example/pixel.png")) is None
    assert "https://tracker.example/pixel.png" in doc.refused


def test_raw_html_is_shown_as_text() -> None:
    html = render_markdown("<script>alert(1)</script> <b>bold?</b>")
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;b&gt;" in html


def test_autoscroll_only_when_already_at_bottom(qtbot: Any, view: ChatView) -> None:
    view.show_messages([user(str(i), f"line {i}") for i in range(200)])
    _settle(qtbot, view)
    bar = view.verticalScrollBar()
    qtbot.wait_until(lambda: bar.value() == bar.maximum())
    view.update_message(assistant("new1", "fresh"))
    _settle(qtbot, view)
    qtbot.wait_until(lambda: bar.value() == bar.maximum())
    bar.setValue(0)
    view.update_message(assistant("new2", "more"))
    _settle(qtbot, view)
    assert bar.value() == 0, "reading history must not be yanked to the bottom"
    assert not view.at_bottom


def test_system_and_assistant_left_user_right(qtbot: Any, view: ChatView) -> None:
    view.show_messages(
        [user("u", "mine"), assistant("a", "theirs"), ChatMessage("s", Role.SYSTEM, "note")]
    )
    _settle(qtbot, view)
    width = view.viewport().width()
    u = view.bubbles.layout_for(view.chat_model.index(0)).bubble
    a = view.bubbles.layout_for(view.chat_model.index(1)).bubble
    assert u.right() > width - 40 and u.left() > width / 2
    assert a.left() < 40


def _long_session(n: int) -> list[ChatMessage]:
    return [(user if i % 2 else assistant)(str(i), f"message {i} " * (1 + i % 7)) for i in range(n)]


def test_reply_growing_in_a_long_session_never_remeasures_every_row(
    qtbot: Any, view: ChatView, monkeypatch: Any
) -> None:
    view.show_messages([*_long_session(5_000), assistant("r", "", streaming=True)])
    _settle(qtbot, view)
    full_passes: list[int] = []
    original = view.bubbles.row_heights
    monkeypatch.setattr(view.bubbles, "row_heights", lambda: full_passes.append(1) or original())
    reply = view.chat_model.message_at(5_000)
    last = view.chat_model.index(5_000)
    for line in range(12):
        reply.text += f"line {line} of a reply that keeps growing\n\n"
        with qtbot.wait_signal(view.chat_model.flushed):
            view.update_message(reply)
        view.viewport().repaint()
        rect = view.visualRect(last)
        assert rect.bottom() + 1 == view.viewport().height(), "the growing reply stays in view"
    assert view.visualRect(last).height() > 12 * 15, "the reply really grew"
    assert full_passes == [], "a growing reply re-measured every row of the session"
    assert view.at_bottom


def test_history_being_read_stays_put_when_a_row_on_screen_grows(
    qtbot: Any, view: ChatView
) -> None:
    view.show_messages(_long_session(400))
    _settle(qtbot, view)
    view.scrollTo(view.chat_model.index(200), ChatView.ScrollHint.PositionAtTop)
    view.viewport().repaint()
    assert not view.at_bottom
    anchor = view.chat_model.index(200)
    top = view.visualRect(anchor).top()
    grown = view.chat_model.message_at(200)
    grown.text += "\n\nmore words " * 30
    with qtbot.wait_signal(view.chat_model.flushed):
        view.update_message(grown)
    view.viewport().repaint()
    assert view.visualRect(anchor).top() == top, "the row being read did not jump"
    assert view.visualRect(anchor).height() > 200
    assert not view.at_bottom


def test_keyboard_moves_through_messages_and_scrolls_them_into_view(
    qtbot: Any, view: ChatView
) -> None:
    view.show_messages(_long_session(300))
    _settle(qtbot, view)
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_Home)
    first = view.chat_model.index(0)
    assert view.currentIndex().row() == 0
    assert view.visualRect(first).top() == 0, "Home shows the first message"
    QTest.keyClick(view, Qt.Key.Key_Down)
    assert view.currentIndex().row() == 1
    QTest.keyClick(view, Qt.Key.Key_PageDown)
    assert view.currentIndex().row() > 3
    QTest.keyClick(view, Qt.Key.Key_End)
    last = view.chat_model.index(299)
    assert view.currentIndex().row() == 299
    assert view.visualRect(last).intersects(view.viewport().rect())
    assert view.at_bottom


def _ring_pixels(view: ChatView, row: int) -> int:
    """Pixels of the accent colour just outside a message's bubble: its focus ring."""
    index = view.chat_model.index(row)
    bubble = view.bubbles.layout_for(index).bubble.translated(view.visualRect(index).topLeft())
    image = view.viewport().grab().toImage()
    accent = QColor(view.bubbles.colors.accent)
    left = round(bubble.left())
    return sum(
        _near(image.pixelColor(x, y), accent)
        for x in range(left - 4, left)
        for y in range(round(bubble.top()) + 16, round(bubble.bottom()) - 16)
    )


def _near(a: QColor, b: QColor) -> bool:
    return abs(a.red() - b.red()) + abs(a.green() - b.green()) + abs(a.blue() - b.blue()) < 60


def test_a_click_in_the_chat_shows_no_focus_ring_and_the_keyboard_brings_it_back(
    qtbot: Any, view: ChatView
) -> None:
    # Clicking a message to select its text drew an accent ring around it, as if the click
    # had picked the message: the ring is where the keyboard is, shown once keys are used.
    view.show_messages([user("u1", "a question " * 8), assistant("a1", "an answer " * 30)])
    _settle(qtbot, view)
    index = view.chat_model.index(1)
    bubble = view.bubbles.layout_for(index).bubble.translated(view.visualRect(index).topLeft())
    QTest.mouseClick(
        view.viewport(), Qt.MouseButton.LeftButton, pos=bubble.center().toPoint() + QPoint(0, 4)
    )
    assert view.hasFocus() and view.currentIndex().row() == 1
    assert _ring_pixels(view, 1) == 0, "a click drew the keyboard's focus ring"
    # On the way to Ctrl+C after selecting with the mouse: a modifier alone and a shortcut are
    # not moving through the messages.
    QTest.keyClick(view, Qt.Key.Key_Control, Qt.KeyboardModifier.ControlModifier)
    QTest.keyClick(view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert _ring_pixels(view, 1) == 0, "Ctrl (Ctrl+C) drew the keyboard's focus ring"
    QTest.keyClick(view, Qt.Key.Key_Up)
    assert view.currentIndex().row() == 0
    assert _ring_pixels(view, 0) > 20, "the keyboard's current message has no ring"
    QTest.keyClick(view, Qt.Key.Key_Down)
    assert _ring_pixels(view, 1) > 20 and _ring_pixels(view, 0) == 0


def test_screen_readers_see_one_list_item_per_message(qtbot: Any, view: ChatView) -> None:
    from PySide6.QtGui import QAccessible

    view.show_messages([user("u1", "hello there"), assistant("a1", "general kenobi")])
    _settle(qtbot, view)
    iface = QAccessible.queryAccessibleInterface(view)
    assert iface.role() == QAccessible.Role.List
    assert iface.childCount() == 2
    item = iface.child(1)
    assert item.role() == QAccessible.Role.ListItem
    assert item.text(QAccessible.Text.Name) == "assistant: general kenobi"
    assert not item.rect().isEmpty()


def test_narrower_window_keeps_the_newest_message_at_the_bottom(qtbot: Any, view: ChatView) -> None:
    view.show_messages(_long_session(2_000))
    _settle(qtbot, view)
    total = view.verticalScrollBar().maximum()
    view.resize(360, 480)
    qtbot.wait_until(lambda: view.verticalScrollBar().maximum() > total)
    view.viewport().repaint()
    last = view.visualRect(view.chat_model.index(1_999))
    assert last.bottom() + 1 == view.viewport().height(), "the newest message is still in view"
    assert view.at_bottom


def test_clicks_land_on_the_row_under_the_pointer(qtbot: Any, view: ChatView) -> None:
    view.show_messages(_long_session(50))
    _settle(qtbot, view)
    for row in (49, 48, 45):
        rect = view.visualRect(view.chat_model.index(row))
        if rect.intersects(view.viewport().rect()):
            assert view.indexAt(rect.center()).row() == row
    assert not view.indexAt(QPoint(5, -10)).isValid() or view.verticalScrollBar().value() > 0


def test_long_session_opens_at_its_end_and_its_start_is_measured_on_arrival(
    qtbot: Any, view: ChatView
) -> None:
    messages = _long_session(3_000)
    messages[0] = assistant("0", "first line\n\n" + "a much longer opening answer " * 40)
    view.show_messages(messages)
    _settle(qtbot, view)
    last = view.chat_model.index(2_999)
    assert view.visualRect(last).bottom() + 1 == view.viewport().height(), "opens at the end"
    view.verticalScrollBar().setValue(0)
    view.viewport().repaint()
    first = view.chat_model.index(0)
    rect = view.visualRect(first)
    assert rect.top() == 0, "the session's first message is at the top"
    assert rect.height() == view.bubbles.measure(first), "shown at its real height"
    assert rect.height() > 150, "the long opening answer is not squeezed into an estimate"


def test_an_empty_chat_says_what_to_do(qtbot: Any) -> None:
    from desktop.ui.chat.view import ChatView

    view = ChatView()
    qtbot.addWidget(view)
    view.resize(600, 400)
    view.show_messages([])
    image = view.viewport().grab().toImage()
    background = image.pixelColor(2, 2)
    centre = [image.pixelColor(x, y) for x in range(200, 400, 2) for y in range(170, 230, 2)]
    assert any(c != background for c in centre), "the empty chat shows no hint"
    assert "start a conversation" in ChatView.EMPTY_HINT


def test_older_history_arriving_above_leaves_the_message_being_read_in_place(
    qtbot: Any, view: ChatView
) -> None:
    older, loaded = _long_session(300)[:100], _long_session(300)[100:]
    view.show_messages(loaded)
    _settle(qtbot, view)
    wanted: list[bool] = []
    view.older_wanted.connect(lambda: wanted.append(True))
    view.scrollTo(view.chat_model.index(5), ChatView.ScrollHint.PositionAtTop)
    view.viewport().repaint()
    assert wanted, "near the top of what is loaded, older history is asked for"
    reading = view.chat_model.message_at(5)
    top = view.visualRect(view.chat_model.index(5)).top()
    view.prepend_messages(older)
    view.viewport().repaint()
    assert view.chat_model.rowCount() == 300
    assert view.chat_model.message_at(0).id == older[0].id
    row = view.chat_model.row_of(reading.id)
    assert row == 105
    assert view.visualRect(view.chat_model.index(row)).top() == top, "the text being read moved"
    assert not view.at_bottom


def _long_chat_at_rest(qtbot: Any, view: ChatView) -> None:
    """A 400-message chat shown at its end, with nothing left to draw ahead (idle)."""
    view.show_messages(_long_session(400))
    _settle(qtbot, view)
    view.viewport().repaint()
    qtbot.wait_until(lambda: not view.drawing_ahead)


def test_a_page_up_shows_bubbles_already_drawn_while_the_app_was_idle(
    qtbot: Any, view: ChatView
) -> None:
    _long_chat_at_rest(qtbot, view)
    built = view.bubbles.layouts_built
    bar = view.verticalScrollBar()
    bar.setValue(bar.value() - bar.pageStep())
    view.viewport().repaint()
    assert view.bubbles.layouts_built == built, "a page step laid out text while scrolling"
    qtbot.wait_until(lambda: not view.drawing_ahead)
    assert not view.drawing_ahead, "idle again: no timer left running"


def test_a_jump_far_up_lets_go_of_the_bubbles_drawn_where_the_view_was(
    qtbot: Any, view: ChatView
) -> None:
    # At rest the view keeps drawn only what is on screen and what is drawn ahead of it: after
    # a jump to the start of a long chat, the end's pixmaps go (memory at rest, not at the
    # high-water mark), and the end looks the same when the view jumps back.
    _long_chat_at_rest(qtbot, view)
    end = {key[0] for key in view.render_cache.pixmaps}
    at_end = view.viewport().grab().toImage()
    view.scrollToTop()
    view.viewport().repaint()
    qtbot.wait_until(lambda: not view.drawing_ahead)
    qtbot.wait_until(lambda: end.isdisjoint(key[0] for key in view.render_cache.pixmaps))
    start = {key[0] for key in view.render_cache.pixmaps}
    assert start, "what is on screen stays drawn"
    assert view.chat_model.message_at(0).id in start
    view.scrollToBottom()
    view.viewport().repaint()
    assert view.viewport().grab().toImage() == at_end


def test_nothing_is_drawn_ahead_while_a_reply_grows_on_screen_and_all_is_once_it_stops(
    qtbot: Any, view: ChatView
) -> None:
    # Drawing a row ahead can take milliseconds (a tile of a long finished reply): while a
    # reply streams in view, its next words would wait for it.
    reply = assistant("r", "first words", streaming=True)
    view.show_messages([*_long_session(400), reply])
    _settle(qtbot, view)
    view.viewport().repaint()
    above = view.chat_model.index(view.indexAt(QPoint(5, 1)).row() - 1)
    for k in range(5):  # the reply grows, and the drawing-ahead timer fires between frames
        with qtbot.wait_signal(view.chat_model.flushed):
            reply.text += f" w{k}"
            view.update_message(reply)
        view.viewport().repaint()
        view._prepare_ahead()
        assert view.drawing_ahead, "no look again once the reply stops"
    assert not view.bubbles.is_prepared(above), "a row was drawn ahead while the reply grew"
    reply.streaming = False
    with qtbot.wait_signal(view.chat_model.flushed):
        view.update_message(reply)
    view.viewport().repaint()
    qtbot.wait_until(lambda: view.bubbles.is_prepared(above))
    qtbot.wait_until(lambda: not view.drawing_ahead)


def test_rows_let_go_far_away_leave_the_message_being_read_and_its_selection_in_place(
    qtbot: Any, view: ChatView
) -> None:
    msgs = _long_session(1_400)
    view.show_messages(msgs)
    _settle(qtbot, view)
    # Far up in what is loaded: the newest 200 rows are let go.
    view.scrollTo(view.chat_model.index(300), ChatView.ScrollHint.PositionAtTop)
    view.viewport().repaint()
    reading = view.chat_model.message_at(300)
    top = view.visualRect(view.chat_model.index(300)).top()
    view.select_text(reading.id, (0, 0), (0, 7))
    view.drop_messages(200, newest=True)
    view.viewport().repaint()
    assert view.chat_model.rowCount() == 1_200
    assert view.chat_model.message_at(1_199).id == msgs[1_199].id, "the newest went"
    assert view.visualRect(view.chat_model.index(300)).top() == top, "the text being read moved"
    assert view.selected_text() == "message", "the selection on screen was lost"
    # Reading down again: the oldest 200 go, the message read stays where it is on screen.
    view.drop_messages(200, newest=False)
    view.viewport().repaint()
    row = view.chat_model.row_of(reading.id)
    assert row == 100 and view.chat_model.message_at(0).id == msgs[200].id
    assert view.visualRect(view.chat_model.index(row)).top() == top, "the text being read moved"
    assert view.selected_text() == "message"
    assert not view.at_bottom


def _newest_on_screen(v: ChatView) -> bool:
    n = v.chat_model.rowCount()
    return n > 0 and v.visualRect(v.chat_model.index(n - 1)).bottom() <= v.viewport().height()


def test_jump_button_shows_far_up_only_and_lands_on_the_newest_message(
    qtbot: Any, view: ChatView
) -> None:
    view.show_messages(_long_session(400))
    _settle(qtbot, view)
    button = view.jump_button
    assert not button.isVisible(), "at the newest message: no jump button"
    bar = view.verticalScrollBar()
    bar.setValue(bar.maximum() - view.viewport().height() // 2)
    assert not button.isVisible(), "half a screen up: still no button"
    bar.setValue(bar.maximum() - 3 * view.viewport().height())
    assert button.isVisible(), "three screens up: the button shows"
    assert button.accessibleName() == "Jump to newest"
    assert button.toolTip() == "Jump to newest (Ctrl+End)"
    menu = view.message_menu(300)
    jump = next(a for a in menu.actions() if a.text() == "Jump to newest")
    assert jump.shortcut().toString() == "Ctrl+End"
    menu.deleteLater()
    corner = view.viewport().geometry().bottomRight()
    assert button.geometry().right() < corner.x() and button.geometry().bottom() < corner.y()
    assert corner.x() - button.geometry().right() < 3 * button.width(), "at the bottom-right"
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)
    _settle(qtbot, view)
    assert view.at_bottom and _newest_on_screen(view)
    assert view.currentIndex().row() == 399
    assert not button.isVisible(), "at the newest message the button goes"


def test_a_reply_arriving_far_up_is_counted_on_the_jump_button(qtbot: Any, view: ChatView) -> None:
    view.show_messages(_long_session(400))
    _settle(qtbot, view)
    bar = view.verticalScrollBar()
    bar.setValue(bar.maximum() - 3 * view.viewport().height())
    button = view.jump_button
    assert button.replies == 0
    view.update_message(user("u-new", "and another thing"))
    assert button.replies == 0, "the user's own prompt is no reply"
    view.update_message(assistant("a-new", "Here it is."))
    assert button.replies == 1 and button.accessibleName() == "Jump to newest, 1 new reply"
    assert not view.at_bottom, "reading far up: the view did not follow the reply"
    button.grab()  # the badge paints
    QTest.keyClick(view, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
    _settle(qtbot, view)
    assert view.chat_model.message_at(view.currentIndex().row()).id == "a-new"
    assert view.at_bottom and _newest_on_screen(view)
    assert button.replies == 0 and not button.isVisible()


def test_ctrl_end_with_the_newest_rows_let_go_shows_the_live_end_again(
    qtbot: Any, view: ChatView
) -> None:
    msgs = _long_session(1_400)
    view.show_messages(msgs)
    _settle(qtbot, view)
    view.scrollTo(view.chat_model.index(300), ChatView.ScrollHint.PositionAtTop)
    view.drop_messages(200, newest=True)  # far up: the newest rows were let go
    view.setFocus()
    # The window answers `live_end_wanted` by showing the session from its live end.
    view.live_end_wanted.connect(lambda: view.show_messages(msgs[-200:]))
    assert view.jump_button.isVisible()
    with qtbot.wait_signal(view.live_end_wanted, timeout=1000):
        QTest.keyClick(view, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
    _settle(qtbot, view)
    assert view.chat_model.message_at(view.chat_model.rowCount() - 1).id == msgs[-1].id
    assert view.at_bottom and _newest_on_screen(view)
    assert not view.jump_button.isVisible()


def _code_colours(view: ChatView, row: int) -> set[str]:
    """The text colours in a message's code line (the one with `total` in it)."""
    code = "total = compute(42, scale=2)  # step"
    return {f.foreground().color().name() for text, f in laid_out(view, row) if text in code}


def test_the_first_code_shown_waits_for_its_colours_not_the_chat_for_its_lexer(
    qtbot: Any, view_at_start: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A chat opened at start-up with code on its first screen waited ~35 ms more for its
    # first paint: pygments imported and its Python lexer's patterns compiled on the way.
    # Shown plain at once, the code gets its colours in idle time, laid out again.
    from desktop.ui.render import markdown

    view = view_at_start
    monkeypatch.setattr(markdown, "_LINKS_READY", True)  # (links: the next test)
    monkeypatch.setattr(markdown, "_LEXERS_LOADED", set())  # as in a process just started
    monkeypatch.setattr(markdown, "_STYLES_LOADED", set())
    loaded: list[str] = []
    real = markdown._lexer
    monkeypatch.setattr(markdown, "_lexer", lambda lang: loaded.append(lang) or real(lang))
    code = "Here:\n\n```python\ntotal = compute(42, scale=2)  # step\n```\n\nDone."
    view.show_messages([user("u1", "code please"), assistant("a1", code)])
    qtbot.wait_until(lambda: 1 in view.bubbles.painted_rows)
    assert loaded == [], "the chat's first paint waited for pygments' lexer"
    assert len(_code_colours(view, 1)) == 1, "code shown in colours before any lexer ran"
    qtbot.wait_until(lambda: not view.bubbles.colouring and len(_code_colours(view, 1)) > 2)
    assert loaded == ["python"]
    # On screen: the number drawn in its colour (none of it before the colours came).
    number = _fragment_colour(view, 1, "42")
    assert number != view.bubbles.colors.text
    qtbot.wait_until(lambda: _pixels_near(view, 1, number) > 8)


def _fragment_colour(view: ChatView, row: int, text: str) -> str:
    doc = view.bubbles.layout_for(view.chat_model.index(row)).doc
    assert doc is not None
    found = doc.find(text)
    return found.charFormat().foreground().color().name()


def _pixels_near(view: ChatView, row: int, colour: str) -> int:
    rect = view.visualRect(view.chat_model.index(row))
    image = view.viewport().grab().toImage()
    want = QColor(colour)
    return sum(
        _near(image.pixelColor(x, y), want)
        for x in range(max(0, rect.left()), min(image.width(), rect.right()))
        for y in range(max(0, rect.top()), min(image.height(), rect.bottom()))
    )


def _links(view: ChatView, row: int) -> list[str]:
    """The links in a message as laid out now."""
    return [f.anchorHref() for _text, f in laid_out(view, row) if f.isAnchor()]


def test_the_first_links_shown_wait_for_linkify_not_the_chat(
    qtbot: Any, view_at_start: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Linkify's patterns (~35 ms to compile) held up a chat's first paint at start-up. Shown
    # as text at once, a bare link is a link once they are compiled, in idle time.
    from desktop.ui.render import markdown

    view = view_at_start
    monkeypatch.setattr(markdown, "_LINKS_READY", False)  # as in a process just started
    warmed: list[int] = []
    real = markdown.warm_links
    monkeypatch.setattr(markdown, "warm_links", lambda: warmed.append(1) or real())
    reply = "The notes are at https://example.com/docs for now."
    view.show_messages([user("u1", "where are the notes?"), assistant("a1", reply)])
    qtbot.wait_until(lambda: 1 in view.bubbles.painted_rows)
    assert warmed == [], "the chat's first paint waited for linkify's patterns"
    assert _links(view, 1) == []
    qtbot.wait_until(lambda: not view.bubbles.colouring)
    assert warmed == [1]
    assert _links(view, 1) == ["https://example.com/docs"]
    # And it is one: a click on it opens it.
    opened: list[str] = []
    monkeypatch.setattr(
        LinkOpener,
        "open_external",
        classmethod(lambda cls, url: opened.append(url.toString()) or True),
    )
    _click_text(view, 1, "example.com")
    assert opened == ["https://example.com/docs"]


def _click_text(view: ChatView, row: int, text: str) -> None:
    """Click in the middle of the first `text` in a message."""
    index = view.chat_model.index(row)
    lay = view.bubbles.layout_for(index)
    doc = lay.doc
    assert doc is not None
    found = doc.find(text)
    block = found.block()
    at = (found.selectionStart() + found.selectionEnd()) // 2 - block.position()
    line = block.layout().lineForTextPosition(at)
    x = line.cursorToX(at)
    x = x[0] if isinstance(x, tuple) else x
    box = doc.documentLayout().blockBoundingRect(block)
    rect = view.visualRect(index)
    pos = QPoint(
        int(rect.left() + lay.doc_pos.x() + box.left() + x),
        int(rect.top() + lay.doc_pos.y() + box.top() + line.y() + line.height() / 2),
    )
    QTest.mouseClick(
        view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pos
    )
