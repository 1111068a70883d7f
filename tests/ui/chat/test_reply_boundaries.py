"""A reply finishing or the next one starting changes only those bubbles, not the whole view."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QTimer

from desktop.common.clock import AsyncioClock
from desktop.core.chats.conversation import Conversation
from desktop.core.link.protocol import Event
from desktop.core.profile.feed import ConversationFeed
from tests.ui.fakes import FakeBackend, assistant, user


class _Index:
    """The feed's session index, reduced to what a change notification touches."""

    def follow(self, conv: Conversation) -> None:
        pass

    def keep_streaming(self, conv: Conversation, *, now: bool = False) -> None:
        pass

    def attach_versions(self, key: str, messages: list[Any]) -> None:
        pass

    def attach_sent(self, key: str, messages: list[Any]) -> list[Any]:
        return []


def _wired(b: FakeBackend, conv: Conversation) -> ConversationFeed:
    """The real conversation -> feed path, its listener calls going to the window."""
    feed = ConversationFeed(None, _Index(), AsyncioClock(), b.notify)  # type: ignore[arg-type]
    feed.publish(conv.key, conv)
    return feed


def _first_reply_streaming(make_window: Any, history: list[Any]) -> tuple[Any, Conversation]:
    """A window showing chat s1 (`history`) whose first reply streams "The first reply"."""
    b = FakeBackend(pid="p1")
    b.messages = {"s1": history}
    win = make_window(b)
    win.open_session("s1")
    conv = Conversation("s1")
    conv.seed(list(history))
    _wired(b, conv)
    conv.apply(Event("message.start"))
    conv.apply(Event("message.delta", payload={"text": "The first reply"}))
    return win, conv


def test_reading_further_up_is_not_disturbed_when_a_reply_ends_and_the_next_begins(
    qtbot: Any, make_window: Any
) -> None:
    history = [
        m
        for i in range(30)
        for m in (user(f"u{i}", f"question {i}"), assistant(f"a{i}", f"answer **{i}**\n\nmore"))
    ]
    win, conv = _first_reply_streaming(make_window, history)
    view = win.chat_view
    model = view.chat_model
    model.flush()
    bar = view.verticalScrollBar()
    qtbot.wait_until(lambda: bar.maximum() > 0)
    bar.setValue(bar.maximum() // 3)  # the user scrolled up to read
    reading = bar.value()
    conv.apply(Event("message.complete", payload={"text": "The first reply, finished."}))
    conv.apply(Event("message.start"))
    conv.apply(Event("message.delta", payload={"text": "The second"}))
    model.flush()
    texts = [model.message_at(r).text for r in range(model.rowCount())]
    assert texts[-2:] == ["The first reply, finished.", "The second"]
    assert not model.message_at(model.rowCount() - 2).streaming
    assert bar.value() == reading, "the view jumped away from what the user was reading"


def test_the_next_reply_starts_in_the_same_paint_as_the_last_one_ends(
    qtbot: Any, make_window: Any
) -> None:
    """A queued prompt's reply starts as the last one ends (one loop turn): the ended reply is
    drawn as it ended and the new one's first words with it, in one paint, not a paint of the
    reply as it was with an empty row under it first (a frame later for the new words)."""
    from PySide6.QtCore import QEvent, QObject

    history = [user("u0", "question"), assistant("a0", "answer")]
    win, conv = _first_reply_streaming(make_window, history)
    view, model = win.chat_view, win.chat_view.chat_model
    # What each paint draws: the rows, and the version of the first reply it draws (a row is
    # laid out and drawn anew when its version, what the model published of it, changes).
    paints: list[tuple[list[str], int]] = []
    first = conv.messages[-1].id

    class Paints(QObject):
        def eventFilter(self, obj: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Paint:
                rows = [m.text for m in model.messages()]
                paints.append((rows, model.revision_of(first)))
            return False

    counter = Paints(view.viewport())
    view.viewport().installEventFilter(counter)
    qtbot.wait_until(lambda: bool(paints) and paints[-1][0][-1] == "The first reply")
    qtbot.wait_until(lambda: not any(t.isActive() for t in model.findChildren(QTimer)))
    streamed = model.revision_of(first)
    paints.clear()
    conv.apply(Event("message.complete", payload={"text": "The first reply, finished."}))
    conv.apply(Event("message.start"))
    conv.apply(Event("message.delta", payload={"text": "The second"}))
    qtbot.wait_until(lambda: bool(paints) and paints[-1][0][-1] == "The second")
    rows, drawn = paints[0]
    assert rows[-2:] == ["The first reply, finished.", "The second"], paints
    assert drawn > streamed, "the first paint drew the first reply as it streamed"


def test_a_reply_that_ends_as_it_showed_keeps_the_block_its_last_frame_laid_out(
    qtbot: Any, make_window: Any, monkeypatch: Any
) -> None:
    """The reply's end changes its footer, not its text: the block it was writing is not parsed
    and laid out again (a long last paragraph cost a frame's worth at every turn's end), and
    its pixels are copied from the last frame down to the footer."""
    from desktop.ui.render import markdown
    from desktop.ui.render.bubble_layout import CORNER

    history = [user("u0", "question"), assistant("a0", "answer")]
    win, conv = _first_reply_streaming(make_window, history)
    long = " and then some more words to wrap" * 30
    conv.apply(Event("message.delta", payload={"text": long}))
    view, model = win.chat_view, win.chat_view.chat_model
    index = model.index(model.rowCount() - 1)
    qtbot.wait_until(lambda: long in model.message_at(index.row()).text)
    qtbot.wait_until(lambda: view.bubbles.painted_rows >= {index.row()})
    lay = view.bubbles.layout_for(index)
    assert lay.tail_doc is not None
    parsed: list[str] = []
    real = markdown.render_markdown_fresh
    monkeypatch.setattr(
        markdown,
        "render_markdown_fresh",
        lambda text, *a, **k: parsed.append(text) or real(text, *a, **k),
    )
    kept = view.bubbles.rows_kept
    view.bubbles.painted_rows.clear()
    conv.apply(Event("message.complete", payload={"text": "The first reply" + long}))
    model.flush()
    qtbot.wait_until(lambda: index.row() in view.bubbles.painted_rows)
    ended = view.bubbles.layout_for(index)
    assert not model.message_at(index.row()).streaming
    assert ended.tail_doc is lay.tail_doc, "the block being written was laid out again"
    assert parsed == []
    # (all but the bubble's top corner above it and the footer under it)
    text_bottom = ended.tail_pos.y() + ended.tail_doc.size().height()
    assert view.bubbles.rows_kept - kept >= text_bottom - ended.bubble.top() - CORNER - 1
