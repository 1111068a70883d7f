"""A reply's turn duration: message.start to message.complete, kept over rebuilds and restarts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop.common.clock import ManualClock
from desktop.core.chats.conversation import Conversation
from desktop.core.chats.index import SessionIndex
from desktop.core.disk.store import Store
from desktop.core.link.protocol import Event
from desktop.core.models import Role


def ev(etype: str, **payload: Any) -> Event:
    return Event(type=etype, session_id="r", payload=payload)


class Now:
    def __init__(self) -> None:
        self.t = 1_700_000_000.0

    def __call__(self) -> float:
        return self.t


def turn(conv: Conversation, now: Now, seconds: float, text: str = "Done.") -> None:
    conv.apply(ev("message.start"))
    now.t += seconds
    conv.apply(ev("message.delta", text=text))
    conv.apply(ev("message.complete", text=text, status="complete"))


def test_a_reply_takes_the_time_from_its_start_to_its_completion() -> None:
    now = Now()
    conv = Conversation("k", now=now)
    turn(conv, now, 75.0)
    [reply] = conv.messages
    assert reply.duration == 75.0
    now.t += 500  # the next turn counts from its own start
    turn(conv, now, 2.5, "Again.")
    assert [m.duration for m in conv.messages] == [75.0, 2.5]


def test_a_reply_whose_start_was_not_seen_says_no_duration() -> None:
    now = Now()
    conv = Conversation("k", now=now)
    conv.load_snapshot({"running": True, "messages": [{"role": "user", "content": "hi"}]})
    now.t += 30
    conv.apply(ev("message.delta", text="late"))
    conv.apply(ev("message.complete", text="late", status="complete"))
    assert [m.duration for m in conv.messages if m.role is Role.ASSISTANT] == [None]


def test_the_duration_survives_a_history_rebuild_and_a_restart(tmp_path: Path) -> None:
    now = Now()
    conv = Conversation("s1", now=now)
    conv.load_snapshot({"running": False, "messages": [{"role": "user", "content": "hi"}]})
    turn(conv, now, 12.0, "Hello.")
    rows = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello."}]
    conv.load_snapshot({"running": False, "messages": rows})  # a reconnect's rebuild
    assert [m.duration for m in conv.messages] == [None, 12.0]

    store = Store(tmp_path / "store.sqlite3")
    index = SessionIndex("p", store, ManualClock(), lambda *_: None)
    index.merge_listed([{"id": "s1", "title": "t", "updated_at": 1.0}])
    index.cache_conversation("s1", conv)
    again = SessionIndex("p", store, ManualClock(), lambda *_: None)  # the app restarted
    assert [m.duration for m in again.cached_messages("s1")] == [None, 12.0]
    store.close()
