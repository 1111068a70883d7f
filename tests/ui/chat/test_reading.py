"""Reading a conversation: selecting and copying text, and each message's actions."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import QAction, QColor, QContextMenuEvent, QGuiApplication
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QMenu

from desktop.core.models import DeliveryState, SessionSummary
from desktop.ui.chat.view import ChatView
from tests.ui.fakes import FakeBackend, assistant, user

REPLY = "Hello **general** Kenobi, you are a bold one.\n\nSecond paragraph with `code`."


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


def _point_of(view: ChatView, row: int, pos: int) -> QPoint:
    """The viewport point just right of character `pos` of a message's text (its middle)."""
    index = view.chat_model.index(row)
    doc, at = view.bubbles.layout_for(index).text_docs()[0]
    block = doc.findBlock(pos)
    layout = block.layout()
    line = layout.lineForTextPosition(pos - block.position())
    x = line.cursorToX(pos - block.position())
    x = x[0] if isinstance(x, tuple) else x
    p = layout.position() + QPointF(x + 1, line.y() + line.height() / 2) + at
    return (p + QPointF(view.visualRect(index).topLeft())).toPoint()


def _drag(view: ChatView, start: QPoint, end: QPoint) -> None:
    vp = view.viewport()
    QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    QTest.mouseMove(vp, end)
    QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, end)


def _run_menu_choosing(monkeypatch: pytest.MonkeyPatch, label: str) -> list[list[str]]:
    """Patch the context menu to pick the action labelled `label`; returns the labels seen."""
    seen: list[list[str]] = []

    def exec_menu(cls: Any, menu: QMenu, pos: QPoint) -> QAction | None:
        actions = [a for a in menu.actions() if not a.isSeparator()]
        seen.append([a.text() for a in actions])
        for a in actions:
            if a.text() == label:
                assert a.isEnabled(), f"{label} is disabled"
                a.trigger()
                return a
        return None

    monkeypatch.setattr(ChatView, "exec_menu", classmethod(exec_menu))
    return seen


def _highlighted(view: ChatView, row: int) -> int:
    """How many pixels of a row's text are painted in the selection highlight colour."""
    index = view.chat_model.index(row)
    doc, at = view.bubbles.layout_for(index).text_docs()[0]
    area = QRectF(at, doc.size()).toRect().translated(view.visualRect(index).topLeft())
    image = view.viewport().grab(area).toImage()
    accent = QColor(view.bubbles.colors.accent).rgb()
    return sum(
        1
        for y in range(0, image.height(), 2)
        for x in range(0, image.width(), 2)
        if image.pixel(x, y) == accent
    )


def test_dragging_over_a_reply_selects_and_copies_that_part(qtbot: Any, view: ChatView) -> None:
    view.show_messages([user("u1", "hi"), assistant("a1", REPLY)])
    _settle(qtbot, view)
    assert _highlighted(view, 1) == 0
    # "Hello general Kenobi" as shown: the bold marks are not part of the text.
    _drag(view, _point_of(view, 1, 6), _point_of(view, 1, 20))
    assert view.selected_text() == "general Kenobi"
    qtbot.wait_until(lambda: _highlighted(view, 1) > 50)
    QGuiApplication.clipboard().setText("")
    QTest.keySequence(view, "Ctrl+C")
    assert QGuiApplication.clipboard().text() == "general Kenobi"


def test_double_click_selects_a_word_and_escape_clears(qtbot: Any, view: ChatView) -> None:
    view.show_messages([assistant("a1", REPLY)])
    _settle(qtbot, view)
    QTest.mouseDClick(
        view.viewport(),
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
        _point_of(view, 0, 22),
    )
    assert view.selected_text() == "you"
    QTest.keyClick(view, Qt.Key.Key_Escape)
    assert view.selected_text() == ""
    qtbot.wait_until(lambda: _highlighted(view, 0) == 0)


def test_keyboard_alone_selects_and_copies_part_of_a_reply(qtbot: Any, view: ChatView) -> None:
    view.show_messages([user("u1", "hi"), assistant("a1", REPLY)])
    _settle(qtbot, view)
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_End)  # the newest message
    assert view.current_message().id == "a1"
    QTest.keyClick(view, Qt.Key.Key_Right, Qt.KeyboardModifier.ShiftModifier)
    for _ in range(2):
        QTest.keyClick(
            view,
            Qt.Key.Key_Right,
            Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.ControlModifier,
        )
    # Word by word, the selection ends at the next word's start: the space is not copied.
    assert view.selected_text() == "Hello general"
    QGuiApplication.clipboard().setText("")
    QTest.keySequence(view, "Ctrl+C")
    assert QGuiApplication.clipboard().text() == "Hello general"


def test_copy_without_selection_copies_the_message_without_markdown_marks(
    qtbot: Any, view: ChatView
) -> None:
    view.show_messages([assistant("a1", REPLY)])
    _settle(qtbot, view)
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_End)
    QTest.keySequence(view, "Ctrl+C")
    assert QGuiApplication.clipboard().text() == (
        "Hello general Kenobi, you are a bold one.\n\nSecond paragraph with code."
    )
    QTest.keySequence(view, "Ctrl+Shift+C")
    assert QGuiApplication.clipboard().text() == REPLY
    QTest.keySequence(view, "Ctrl+A")
    assert view.selected_text() == (
        "Hello general Kenobi, you are a bold one.\nSecond paragraph with code."
    )


def test_right_click_menu_copies_as_markdown(
    qtbot: Any, view: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    view.show_messages([user("u1", "hi"), assistant("a1", REPLY)])
    _settle(qtbot, view)
    seen = _run_menu_choosing(monkeypatch, "Copy as Markdown")
    QGuiApplication.clipboard().setText("")
    pos = _point_of(view, 1, 3)
    QTest.mouseClick(
        view.viewport(), Qt.MouseButton.RightButton, Qt.KeyboardModifier.NoModifier, pos
    )
    event = QContextMenuEvent(QContextMenuEvent.Reason.Mouse, pos, view.viewport().mapToGlobal(pos))
    QCoreApplication.sendEvent(view.viewport(), event)
    assert seen and "Regenerate reply" in seen[0] and "Quote in reply" in seen[0]
    assert QGuiApplication.clipboard().text() == REPLY


def test_bubble_buttons_are_reachable_from_the_keyboard(
    qtbot: Any, view: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    view.show_messages([user("u1", "send me", DeliveryState.FAILED)])
    _settle(qtbot, view)
    seen = _run_menu_choosing(monkeypatch, "Retry sending")
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_End)
    with qtbot.wait_signal(view.action_requested) as blocker:
        QTest.keyClick(view, Qt.Key.Key_Menu)
    assert blocker.args == ["retry", "u1"]
    assert {"Retry sending", "Edit unsent message", "Discard"} <= set(seen[0])


def _window(make_window: Any) -> tuple[Any, FakeBackend]:
    b = FakeBackend(pid="p1")
    b.summaries = [SessionSummary("s1", "chat", "", 1.0, 3)]
    b.messages = {
        "s1": [
            user("u1", "first question"),
            assistant("a1", "first answer"),
            user("u2", "what is a **quokka**?"),
            assistant("a2", "A small *marsupial*.\n\nVery happy."),
        ]
    }
    win = make_window(b)
    win.open_session("s1")
    win.chat_view.setFocus()
    QTest.keyClick(win.chat_view, Qt.Key.Key_End)
    return win, b


def test_regenerate_sends_the_prompt_of_that_reply_again(make_window: Any) -> None:
    win, b = _window(make_window)
    QTest.keyClick(win.chat_view, Qt.Key.Key_Up)
    QTest.keyClick(win.chat_view, Qt.Key.Key_Up)  # on "first answer"
    assert win.chat_view.current_message().id == "a1"
    QTest.keySequence(win.chat_view, "Ctrl+Shift+R")
    assert [args for name, args in b.calls if name == "send"] == [("s1", "first question", ())]


CODE_REPLY = """Two ways:

- keep it *simple*
  - nested, indented

```python
def hop(n):
    return n * 2
```"""


def test_quote_shows_a_reply_to_line_and_sends_the_markdown_as_written(
    make_window: Any, qtbot: Any
) -> None:
    win, b = _window(make_window)
    QTest.keySequence(win.chat_view, "Ctrl+Shift+Q")
    composer = win.composer
    assert composer.edit.toPlainText() == "", "nothing pasted into the message box"
    assert composer.quote_bar.isVisibleTo(win)
    assert composer.quote_label.text() == "Replying to Assistant: A small marsupial. Very happy."
    assert composer.edit.hasFocus()
    QTest.keyClicks(composer.edit, "how happy?")
    QTest.keyClick(composer.edit, Qt.Key.Key_Return)
    sent = [args for name, args in b.calls if name == "send"]
    assert sent == [("s1", "> A small *marsupial*.\n>\n> Very happy.\n\nhow happy?", ())]
    assert not composer.quote_bar.isVisibleTo(win), "the quote went with the message"
    # Code fences, their language, indentation and list marks are kept as written.
    view = win.chat_view
    view.show_messages([*b.messages["s1"], assistant("a3", CODE_REPLY)])
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_End)
    QTest.keySequence(view, "Ctrl+Shift+Q")
    composer.remove_quote_button.click()
    assert not composer.quote_bar.isVisibleTo(win) and composer.quoted == ""
    view.setFocus()
    QTest.keySequence(view, "Ctrl+Shift+Q")
    QTest.keyClick(composer.edit, Qt.Key.Key_Return)
    quoted = [args for name, args in b.calls if name == "send"][-1][1]
    assert quoted == "\n".join(f"> {line}" if line else ">" for line in CODE_REPLY.split("\n"))
    # A selection inside the code block comes back in its fence.
    row = view.chat_model.row_of("a3")
    assert row is not None
    docs = view.bubbles.layout_for(view.chat_model.index(row)).text_docs()
    at = next(
        (i, d.find("return n").selectionStart())
        for i, (d, _p) in enumerate(docs)
        if not d.find("return n").isNull()
    )
    view.select_text("a3", at, (at[0], at[1] + len("return n * 2")))
    view.setFocus()
    QTest.keySequence(view, "Ctrl+Shift+Q")
    assert composer.quoted == "```python\nreturn n * 2\n```"
    # The sent quote is drawn with a bar down its left side.
    view.show_messages([user("u9", "> quoted words\n\nmy reply")])
    index = view.chat_model.index(view.chat_model.row_of("u9"))
    doc = view.bubbles.layout_for(index).text_docs()[0][0]
    assert "quoted words" in doc.toPlainText() and doc.toPlainText().count(">") == 0
    table = doc.rootFrame().childFrames()
    assert table, "the quote sits in a table whose first cell is the bar"


def test_edit_and_resend_puts_a_sent_prompt_back_for_editing(
    make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    win, b = _window(make_window)
    _run_menu_choosing(monkeypatch, "Edit and resend")
    QTest.keyClick(win.chat_view, Qt.Key.Key_Up)  # on the user's question
    QTest.keyClick(win.chat_view, Qt.Key.Key_Return)  # Enter opens the message's menu
    assert win.composer.edit.toPlainText() == "what is a **quokka**?"
    # The last prompt: sent again, it asks to replace itself and its reply (in place).
    assert win.composer.edit_bar.isVisibleTo(win)
    QTest.keyClick(win.composer.edit, Qt.Key.Key_Return)
    assert ("resend_edited", "u2") in b.calls
    assert [args for name, args in b.calls if name == "send"] == []
    # Where the backend cannot replace it any more, it goes out as a new message.
    b.replaces_in_place = False
    win.chat_view.setFocus()
    QTest.keyClick(win.chat_view, Qt.Key.Key_Return)
    QTest.keyClick(win.composer.edit, Qt.Key.Key_Return)
    assert [args for name, args in b.calls if name == "send"] == [
        ("s1", "what is a **quokka**?", ())
    ]


def test_edit_and_resend_of_an_earlier_prompt_goes_out_as_a_new_message(
    make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    win, b = _window(make_window)
    _run_menu_choosing(monkeypatch, "Edit and resend")
    for _ in range(3):
        QTest.keyClick(win.chat_view, Qt.Key.Key_Up)  # on the first question
    QTest.keyClick(win.chat_view, Qt.Key.Key_Return)
    assert win.composer.edit.toPlainText() == "first question"
    assert not win.composer.edit_bar.isVisibleTo(win), "it says nothing of replacing"
    QTest.keyClick(win.composer.edit, Qt.Key.Key_Return)
    assert [args for name, args in b.calls if name == "send"] == [("s1", "first question", ())]
    assert not any(name == "resend_edited" for name, _ in b.calls)


GFM = (
    "| name | says |\n|---|---|\n| Obi-Wan | hello there |\n| Grievous | ~~general~~ |\n\n"
    "- [ ] fetch sand\n- [x] take high ground\n\nDocs at https://example.com/docs today.\n\n"
    "```\ncode stays code\n```\n"
)


def _doc_of(view: ChatView, row: int) -> Any:
    return view.bubbles.layout_for(view.chat_model.index(row)).text_docs()[0][0]


def test_markdown_tables_strikethrough_task_lists_and_bare_links_render(
    qtbot: Any, view: ChatView
) -> None:
    from PySide6.QtGui import QTextCursor, QTextTable

    view.show_messages([assistant("a1", GFM)])
    _settle(qtbot, view)
    doc = _doc_of(view, 0)
    tables = [f for f in doc.rootFrame().childFrames() if isinstance(f, QTextTable)]
    grid = tables[0]
    assert (grid.rows(), grid.columns()) == (3, 2), "a 2-column table with a header row"
    cell = grid.cellAt(1, 1)
    assert QTextCursor(cell.firstCursorPosition()).block().text() == "hello there"
    # A table is not a code block: only the real code block gets a copy button.
    zones = view.bubbles.layout_for(view.chat_model.index(0)).zones
    assert [z.kind for z in zones] == ["copy"]
    lines = doc.toPlainText().splitlines()
    assert "☐ fetch sand" in lines and "☑ take high ground" in lines
    struck = doc.find("general")
    assert struck.charFormat().fontStrikeOut()
    url = doc.find("https://example.com/docs")
    assert url.charFormat().anchorHref() == "https://example.com/docs"
    # Screen readers and plain copies get the cells, tab-separated, without the pipes.
    from desktop.ui.render.markdown import plain_text

    assert "Obi-Wan\thello there\nGrievous\tgeneral" in plain_text(GFM)


def test_screen_readers_hear_the_text_without_markdown_marks(qtbot: Any, view: ChatView) -> None:
    from PySide6.QtGui import QAccessible

    view.show_messages([assistant("a1", REPLY + "\n\n" + GFM)])
    _settle(qtbot, view)
    name = QAccessible.queryAccessibleInterface(view).child(0).text(QAccessible.Text.Name)
    assert name.startswith("assistant: Hello general Kenobi, you are a bold one.")
    assert "Obi-Wan\thello there" in name and "☐ fetch sand" in name
    assert not any(mark in name for mark in ("**", "`", "|---", "~~", "[ ]"))


def test_a_finished_reply_is_announced_to_screen_readers(
    make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PySide6.QtGui import QAccessible, QAccessibleAnnouncementEvent

    heard: list[tuple[str, Any]] = []
    real = QAccessible.updateAccessibility

    def update(event: Any) -> None:
        if isinstance(event, QAccessibleAnnouncementEvent):
            heard.append((event.message(), event.politeness()))
        real(event)

    monkeypatch.setattr(QAccessible, "updateAccessibility", staticmethod(update))
    _win, b = _window(make_window)
    b.emit("on_running", "s1", True)
    b.emit("on_message_changed", "s1", assistant("a3", "It is **very** happy."))
    assert heard == []
    b.emit("on_running", "s1", False)
    assert heard == [("Reply: It is very happy.", QAccessible.AnnouncementPoliteness.Polite)]
    b.summaries.append(SessionSummary("s9", "Elsewhere", "", 0.5, 1))
    b.emit("on_sessions", list(b.summaries))
    b.emit("on_running", "s9", False)
    assert heard[-1][0] == "New reply in Elsewhere"


def test_shortcuts_act_on_the_current_message_whatever_menu_was_open_before(
    make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    win, b = _window(make_window)
    _run_menu_choosing(monkeypatch, "nothing")
    QTest.keyClick(win.chat_view, Qt.Key.Key_Up)  # a user message: its menu has no regenerate
    QTest.keyClick(win.chat_view, Qt.Key.Key_Menu)
    QTest.keyClick(win.chat_view, Qt.Key.Key_Down)  # back on the reply
    QTest.keySequence(win.chat_view, "Ctrl+Shift+R")
    assert [args for name, args in b.calls if name == "send"] == [
        ("s1", "what is a **quokka**?", ())
    ]


def _announcements(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str]]:
    """What screen readers are told from now on, and the markdown made into plain text for it."""
    from PySide6.QtGui import QAccessible, QAccessibleAnnouncementEvent

    from desktop.ui.window import profile_view

    heard: list[str] = []
    real = QAccessible.updateAccessibility

    def update(event: Any) -> None:
        if isinstance(event, QAccessibleAnnouncementEvent):
            heard.append(event.message())
        real(event)

    read: list[str] = []
    plain = profile_view.plain_text
    monkeypatch.setattr(QAccessible, "updateAccessibility", staticmethod(update))
    monkeypatch.setattr(profile_view, "plain_text", lambda t: read.append(t) or plain(t))
    return heard, read


def test_a_long_finished_reply_is_announced_by_its_start_without_reading_all_of_it(
    make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from desktop.ui.window import profile_view

    heard, read = _announcements(monkeypatch)
    _win, b = _window(make_window)
    b.emit("on_running", "s1", True)
    long = "It is **very** happy. " + "More about quokkas and `their` days. " * 2000
    b.emit("on_message_changed", "s1", assistant("a3", long))
    b.emit("on_running", "s1", False)
    assert heard and heard[-1].startswith("Reply: It is very happy. More about quokkas and their")
    assert heard[-1].endswith("…") and len(heard[-1]) < 400
    read_chars = sum(map(len, read))
    assert len(long) > 70_000 and read_chars <= profile_view.SPOKEN_SOURCE < 1000, "all was read"


def test_a_reply_is_announced_by_its_first_words_without_reading_the_table_after_them(
    make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    heard, read = _announcements(monkeypatch)
    win, b = _window(make_window)
    b.emit("on_running", "s1", True)
    words = "Here is the **summary** of it all: " + " ".join(f"w{k}" for k in range(90))
    table = "| # | name |\n|---|---|\n" + "".join(f"| {r} | `item{r}` |\n" for r in range(40))
    b.emit("on_message_changed", "s1", assistant("a3", f"{words}\n\n{table}"))
    b.emit("on_running", "s1", False)  # not on screen yet: its markdown is read
    assert heard and heard[-1].startswith("Reply: Here is the summary of it all: w0 w1 w2")
    assert read == [words], "the table after the reply's first words was read"
    # On screen (laid out), it is said as shown, read from its documents: nothing parsed.
    read.clear()
    b.emit("on_running", "s1", True)
    b.emit("on_message_changed", "s1", assistant("a3", f"{words}\n\n{table} more"))
    view = win.chat_view
    view.chat_model.flush()
    view.viewport().repaint()
    b.emit("on_running", "s1", False)
    assert heard[-1].startswith("Reply: Here is the summary of it all: w0 w1 w2"), heard[-1]
    assert read == [], "the shown reply's markdown was parsed again to be said"


def test_branch_from_here_opens_a_new_chat_with_the_messages_up_to_that_one(
    make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    win, b = _window(make_window)
    seen = _run_menu_choosing(monkeypatch, "Branch from here")
    QTest.keyClick(win.chat_view, Qt.Key.Key_Up)
    QTest.keyClick(win.chat_view, Qt.Key.Key_Up)  # on "first answer"
    QTest.keyClick(win.chat_view, Qt.Key.Key_Return)  # its menu
    assert "Branch from here" in seen[0]
    assert ("branch_session", ("s1", "a1")) in b.calls
    assert win.session_key is not None and win.session_key != "s1", "the branch is open"
    shown = [m.text for m in win.chat_view.messages()]
    assert shown == ["first question", "first answer"]
    # The keyboard reaches it too.
    win.open_session("s1")
    win.chat_view.setFocus()
    QTest.keyClick(win.chat_view, Qt.Key.Key_End)
    QTest.keySequence(win.chat_view, "Ctrl+Shift+B")
    assert ("branch_session", ("s1", "a2")) in b.calls


def test_branch_from_here_is_greyed_with_the_reason_where_the_gateway_cannot_branch(
    make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    win, b = _window(make_window)
    menus: list[list[tuple[str, bool, str]]] = []

    def exec_menu(cls: Any, menu: QMenu, pos: QPoint) -> QAction | None:
        menus.append([(a.text(), a.isEnabled(), a.toolTip()) for a in menu.actions()])
        return None

    monkeypatch.setattr(ChatView, "exec_menu", classmethod(exec_menu))
    QTest.keyClick(win.chat_view, Qt.Key.Key_Up)
    QTest.keyClick(win.chat_view, Qt.Key.Key_Return)
    assert ("Branch from here", True, "Branch from here") in menus[-1], "offered where it can"
    b.branch_limit = "this gateway cannot branch a chat (it has no session.branch)"
    QTest.keyClick(win.chat_view, Qt.Key.Key_Return)
    offered = [m for m in menus[-1] if m[0] == "Branch from here"]
    assert offered == [
        (
            "Branch from here",
            False,
            "Not available: this gateway cannot branch a chat (it has no session.branch)",
        )
    ]
    QTest.keySequence(win.chat_view, "Ctrl+Shift+B")
    assert not [c for c in b.calls if c[0] == "branch_session"], "not tried"
    assert win.status_message() == (
        "Branch from here is not available: "
        "this gateway cannot branch a chat (it has no session.branch)"
    )


def test_a_greyed_menu_entry_reads_greyed_in_both_themes() -> None:
    from PySide6.QtGui import QPalette

    from desktop.ui.theme import DARK, LIGHT, palette_for

    for colors in (LIGHT, DARK):
        p = palette_for(colors)
        for role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText):
            off = p.color(QPalette.ColorGroup.Disabled, role)
            assert off != p.color(QPalette.ColorGroup.Active, role), "greyed as any other"
            assert off.name() == colors.muted
