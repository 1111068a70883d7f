"""Hermes 0.22's progress events on a conversation: session.usage, message.interim, todo.updated.

Payload shapes as the 0.22.2 wheel's `tui_gateway` sends them (`server._start_usage_ticker`,
`prompt_turn._interim_assistant_cb`, `tool_progress._normalize_todo_state`).
"""

from __future__ import annotations

from typing import Any

from desktop.core.chats.conversation import Conversation
from desktop.core.link.protocol import Event
from desktop.core.models import TodoItem

# `_get_usage(agent)` with a context compressor (agent/context_breakdown.context_usage_fields).
USAGE_TICK = {
    "model": "fake-model",
    "input": 5600,
    "output": 7,
    "total": 5607,
    "calls": 1,
    "context_used": 55_000,
    "context_max": 131_072,
    "context_percent": 42,
    "context_source": "provider_usage",
    "context_estimated": False,
}


def ev(type_: str, seq: int | None = None, **payload: Any) -> Event:
    return Event(type_, "r1", payload, seq)


def running() -> Conversation:
    conv = Conversation("s1")
    conv.apply(ev("message.start", 1))
    conv.apply(ev("message.delta", 2, text="Working"))
    return conv


def test_session_usage_tick_sets_the_context_percentage_shown() -> None:
    conv = running()
    assert conv.session_info().context_percent is None
    assert conv.apply(ev("session.usage", 3, usage=USAGE_TICK))
    info = conv.session_info()
    assert (info.context_percent, info.context_used, info.context_max) == (42, 55_000, 131_072)
    # message.complete's usage is the final figure: it replaces the tick's.
    final = {**USAGE_TICK, "context_used": 60_000, "context_percent": 46}
    conv.apply(ev("message.complete", 4, text="Working", usage=final, status="complete"))
    assert conv.session_info().context_percent == 46
    assert conv.messages[-1].text == "Working"


def test_context_percentage_from_a_snapshot_and_from_used_of_max() -> None:
    conv = Conversation("s1")
    conv.load_snapshot(
        {"session_id": "r1", "messages": [], "running": False, "info": {"usage": USAGE_TICK}}
    )
    assert conv.session_info().context_percent == 42
    # A gateway that only says used/max (no percent) gets it computed.
    conv.apply(ev("session.info", usage={"context_used": 500, "context_max": 2000}))
    assert conv.session_info().context_percent == 25


def test_message_interim_is_the_status_line_never_the_reply_and_clears_at_the_end() -> None:
    conv = running()
    text = "Let me read that file first.\n"
    assert conv.apply(ev("message.interim", 3, text=text, already_streamed=False))
    assert conv.session_info().activity == "Let me read that file first."
    assert conv.messages[-1].text == "Working"  # not appended to the reply
    conv.apply(ev("message.complete", 4, text="Done.", status="complete"))
    assert conv.session_info().activity == ""
    assert conv.status_text == ""
    assert [m.text for m in conv.messages] == ["Done."]


TODOS = {
    "todos": [
        {"id": "1", "content": "Read the config", "status": "completed"},
        {"id": "2", "content": "Fix the parser", "status": "in_progress"},
        {"id": "3", "content": "Run the tests", "status": "pending"},
        {"id": "4", "content": "Old idea", "status": "cancelled"},
    ],
    "revision": 2,
}


def test_todo_updated_keeps_the_latest_list_and_ignores_an_older_revision() -> None:
    conv = running()
    assert conv.apply(ev("todo.updated", 3, **TODOS))
    assert conv.session_info().todos == (
        TodoItem("Read the config", "completed"),
        TodoItem("Fix the parser", "in_progress"),
        TodoItem("Run the tests", "pending"),
        TodoItem("Old idea", "cancelled"),
    )
    stale = {"todos": [{"id": "1", "content": "Read the config", "status": "pending"}]}
    assert not conv.apply(ev("todo.updated", 4, **stale, revision=1))
    assert len(conv.session_info().todos) == 4
    # The list outlives the turn (the agent keeps it); an empty list at a newer revision clears.
    conv.apply(ev("message.complete", 5, text="ok", status="complete"))
    assert len(conv.session_info().todos) == 4
    assert conv.apply(ev("todo.updated", 6, todos=[], revision=3))
    assert conv.session_info().todos == ()


def test_a_snapshot_todo_state_is_adopted() -> None:
    conv = Conversation("s1")
    conv.load_snapshot({"session_id": "r1", "messages": [], "todo_state": TODOS})
    assert [t.status for t in conv.session_info().todos][:2] == ["completed", "in_progress"]
