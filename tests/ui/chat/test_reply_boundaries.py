"""A reply finishing or the next one starting changes only those bubbles, not the whole view."""

from __future__ import annotations

from typing import Any

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


def test_reading_further_up_is_not_disturbed_when_a_reply_ends_and_the_next_begins(
    qtbot: Any, make_window: Any
) -> None:
    history = [
        m
        for i in range(30)
        for m in (user(f"u{i}", f"question {i}"), assistant(f"a{i}", f"answer **{i}**\n\nmore"))
    ]
    b = FakeBackend(pid="p1")
    b.messages = {"s1": history}
    win = make_window(b)
    win.open_session("s1")
    conv = Conversation("s1")
    conv.seed(list(history))
    _wired(b, conv)
    view = win.chat_view
    model = view.chat_model
    conv.apply(Event("message.start"))
    conv.apply(Event("message.delta", payload={"text": "The first reply"}))
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
