"""Finding things: search snippets, landing on the matching message, find in chat (Ctrl+F)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QRectF, Qt
from PySide6.QtGui import QAccessible, QColor, QInputMethodEvent
from PySide6.QtTest import QTest

from desktop.core.disk.store import CachedMessage, SearchHit, Store
from desktop.core.models import SessionSummary
from tests.ui.fakes import FakeBackend, assistant, user

FOUND = QColor("#ffe066").rgb()
CURRENT = QColor("#ff9632").rgb()


def _backend() -> FakeBackend:
    b = FakeBackend(pid="p1")
    b.summaries = [
        SessionSummary("s1", "Kitchen", "tiles", 3.0, 2),
        SessionSummary("s2", "Animals", "marsupials", 2.0, 300),
    ]
    long = [
        (user if i % 2 else assistant)(f"m{i}", f"filler message number {i} about nothing")
        for i in range(300)
    ]
    long[10] = assistant("m10", "The quokka is a small macropod that seems to smile.")
    long[200] = user("m200", "Tell me more about the quokka")
    b.messages = {
        "s1": [user("u1", "which tiles?"), assistant("a1", "Terracotta tiles, general Kenobi.")],
        "s2": long,
    }
    return b


def _settle(qtbot: Any, view: Any) -> None:
    qtbot.wait_until(lambda: not view.bubbles._resize_timer.isActive())
    QCoreApplication.processEvents()
    qtbot.wait_until(lambda: not view.bubbles._resize_timer.isActive())


def _marked(view: Any, row: int, colour: int) -> int:
    """Pixels of a message's text painted in a find highlight colour."""
    index = view.chat_model.index(row)
    doc, at = view.bubbles.layout_for(index).text_docs()[0]
    area = QRectF(at, doc.size()).toRect().translated(view.visualRect(index).topLeft())
    image = view.viewport().grab(area).toImage()
    return sum(
        1
        for y in range(0, image.height(), 2)
        for x in range(0, image.width(), 2)
        if image.pixel(x, y) == colour
    )


def test_search_shows_a_highlighted_snippet_and_enter_lands_on_the_message(
    make_window: Any, qtbot: Any
) -> None:
    win = make_window(_backend())
    win.open_session("s1")
    QTest.keyClicks(win.search_box, "quokka")
    rows = win.session_filter.rowCount()
    assert rows == 1  # one chat, with its best match
    index = win.session_filter.index(0, 0)
    # What the list shows and reads out: the matching words, not the chat's preview.
    iface = QAccessible.queryAccessibleInterface(win.session_list)
    assert "found: The quokka is a small macropod" in iface.child(0).text(QAccessible.Text.Name)
    before = win.session_list.viewport().grab(win.session_list.visualRect(index)).toImage()
    win.session_filter.set_query("quokka", ["s2"], {})  # the same row without its snippet
    plain = win.session_list.viewport().grab(win.session_list.visualRect(index)).toImage()
    assert before != plain, "the snippet, with its highlighted match, is drawn in the row"
    QTest.keyClicks(win.search_box, " ")  # back to the real search
    QTest.keyClick(win.search_box, Qt.Key.Key_Return)
    view = win.chat_view
    assert win.session_key == "s2"
    _settle(qtbot, view)
    assert view.currentIndex().row() == 10, "the matching message, not the end of the chat"
    assert view.visualRect(view.chat_model.index(10)).intersects(view.viewport().rect())
    assert not view.at_bottom
    # The search hit, not the newest match: the find bar then steps through the others.
    assert win.find_bar.isVisible() and win.find_bar.count.text() == "1 of 2"
    qtbot.wait_until(lambda: _marked(view, 10, CURRENT) > 20)


def test_ctrl_f_finds_in_the_open_chat_and_steps_through_matches(
    make_window: Any, qtbot: Any
) -> None:
    b = _backend()
    b.messages["s1"].append(user("u2", "Kenobi again? Hello there, Kenobi"))
    win = make_window(b)
    win.open_session("s1")
    view = win.chat_view
    _settle(qtbot, view)
    view.setFocus()
    QTest.keySequence(win, "Ctrl+F")
    assert win.find_bar.isVisible() and win.find_bar.edit.hasFocus()
    QTest.keyClicks(win.find_bar.edit, "kenobi")
    assert win.find_bar.count.text() == "3 of 3", "each occurrence counts, not each message"
    assert view.currentIndex().row() == 2
    qtbot.wait_until(lambda: _marked(view, 1, FOUND) > 20)  # other matches: yellow
    QTest.keyClick(win.find_bar.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert win.find_bar.count.text() == "2 of 3"
    assert view.currentIndex().row() == 2, "the other occurrence in the same message"
    QTest.keyClick(win.find_bar.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert win.find_bar.count.text() == "1 of 3"
    assert view.currentIndex().row() == 1
    qtbot.wait_until(lambda: _marked(view, 1, CURRENT) > 20)
    QTest.keyClicks(win.find_bar.edit, "zzz")
    assert win.find_bar.count.text() == "No matches"
    QTest.keyClick(win.find_bar.edit, Qt.Key.Key_Escape)
    assert not win.find_bar.isVisible()
    qtbot.wait_until(lambda: _marked(view, 1, CURRENT) + _marked(view, 1, FOUND) == 0)


def _current_mark_top(view: Any, row: int) -> int | None:
    """The viewport y of the topmost pixel painted in the current match's orange, in `row`."""
    rect = view.visualRect(view.chat_model.index(row)) & view.viewport().rect()
    image = view.viewport().grab(rect).toImage()
    for y in range(image.height()):
        if any(image.pixel(x, y) == CURRENT for x in range(0, image.width(), 2)):
            return rect.top() + y
    return None


def test_find_steps_match_by_match_through_a_long_message_and_shows_each(
    make_window: Any, qtbot: Any
) -> None:
    b = _backend()
    lines = [f"line {i} of a long answer" for i in range(120)]
    for i in (8, 50, 90):
        lines[i] = f"line {i} mentions the wombat here"
    b.messages["s1"] = [
        user("u1", "wombat facts please, one wombat at a time"),
        assistant("a1", "\n\n".join(lines)),
    ]
    win = make_window(b)
    win.open_session("s1")
    view = win.chat_view
    _settle(qtbot, view)
    assert view.visualRect(view.chat_model.index(1)).height() > 3 * view.viewport().height()
    QTest.keySequence(win, "Ctrl+F")
    QTest.keyClicks(win.find_bar.edit, "wombat")
    assert win.find_bar.count.text() == "5 of 5", "five occurrences in two messages"
    seen: list[int] = []
    for expected in ("5 of 5", "4 of 5", "3 of 5"):
        assert win.find_bar.count.text() == expected
        assert view.currentIndex().row() == 1
        _settle(qtbot, view)
        top = _current_mark_top(view, 1)
        assert top is not None, f"{expected}: the current match is on screen, in orange"
        middle = view.viewport().height() // 2
        assert abs(top - middle) < 40, f"{expected}: scrolled to the match, near the middle"
        seen.append(view.verticalScrollBar().value())
        QTest.keyClick(win.find_bar.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert seen[0] > seen[1] > seen[2], "each step scrolled up to the previous occurrence"
    assert win.find_bar.count.text() == "2 of 5"
    assert view.currentIndex().row() == 0


class _StoreBackend(FakeBackend):
    """The fake gateway side, searched by the real local store (its indexes and snippets)."""

    def __init__(self, store: Store) -> None:
        super().__init__(pid="p1")
        self.store = store

    def search_hits(self, query: str) -> list[SearchHit]:
        return self.store.search("p1", query)


@pytest.mark.parametrize("word", ["索", "索引", "建立索引"])
def test_all_chats_search_finds_a_chinese_word_inside_a_sentence(
    make_window: Any, qtbot: Any, tmp_path: Path, word: str
) -> None:
    with Store(tmp_path / "app.db") as store:
        b = _StoreBackend(store)
        b.summaries = [
            SessionSummary("s1", "Kitchen", "tiles", 3.0, 2),
            SessionSummary("s2", "数据", "plans", 2.0, 3),
        ]
        b.messages = {
            "s1": [user("u1", "which tiles?"), assistant("a1", "Terracotta tiles.")],
            "s2": [
                user("u2", "怎么加速查询"),
                assistant("a2", "我们需要建立索引来加速"),
                user("u3", "好的谢谢"),
            ],
        }
        for key, msgs in b.messages.items():
            store.replace_messages(
                "p1", key, [CachedMessage(i, str(m.role.value), m.text) for i, m in enumerate(msgs)]
            )
        win = make_window(b)
        win.open_session("s1")
        # As an input method commits the word it composed (QTest types ASCII keys only).
        win.search_box.setFocus()
        event = QInputMethodEvent()
        event.setCommitString(word)
        QCoreApplication.sendEvent(win.search_box, event)
        assert win.search_box.text() == word
        assert win.session_filter.rowCount() == 1
        iface = QAccessible.queryAccessibleInterface(win.session_list)
        assert "found: 我们需要建立索引来加速" in iface.child(0).text(QAccessible.Text.Name)
        index = win.session_filter.index(0, 0)
        marked = win.session_list.viewport().grab(win.session_list.visualRect(index)).toImage()
        win.session_filter.set_query(word, ["s2"], {})  # the same row without its snippet
        plain = win.session_list.viewport().grab(win.session_list.visualRect(index)).toImage()
        assert marked != plain, "the snippet, with its highlighted match, is drawn in the row"
        QTest.keyClicks(win.search_box, " ")
        QTest.keyClick(win.search_box, Qt.Key.Key_Return)
        assert win.session_key == "s2"
        _settle(qtbot, win.chat_view)
        assert win.chat_view.currentIndex().row() == 1, "the message holding the word"


def test_ctrl_f_without_an_open_chat_searches_all_chats(make_window: Any) -> None:
    win = make_window(_backend())
    assert win.session_key is None
    QTest.keySequence(win, "Ctrl+F")
    assert win.search_box.hasFocus()
    win.open_session("s1")
    win.chat_view.setFocus()
    QTest.keySequence(win, "Ctrl+Shift+F")
    assert win.search_box.hasFocus()


def test_a_search_left_in_the_box_filters_a_list_that_arrives_later(qtbot: Any) -> None:
    """The filter works out which chats pass once per list: a new list (the gateway's, after
    connecting) is filtered anew, its new chat found and a chat gone from it not listed."""
    from desktop.ui.sessions.session_list import KEY_ROLE, SessionFilter, SessionListModel

    model = SessionListModel()
    shown = SessionFilter()
    shown.setSourceModel(model)
    model.set_sessions([SessionSummary("s1", "Kitchen tiles"), SessionSummary("s2", "Animals")])
    shown.set_query("tiles", [])
    assert [shown.index(r, 0).data(KEY_ROLE) for r in range(shown.rowCount())] == ["s1"]
    model.set_sessions([SessionSummary("s2", "Animals"), SessionSummary("s3", "Bathroom tiles")])
    assert [shown.index(r, 0).data(KEY_ROLE) for r in range(shown.rowCount())] == ["s3"]
