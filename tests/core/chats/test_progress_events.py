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


def _turn(conv: Conversation, text: str, usage: dict[str, Any], status: str = "complete") -> Any:
    conv.apply(ev("message.start"))
    conv.apply(ev("message.delta", text=text))
    conv.apply(ev("message.complete", text=text, usage=usage, status=status))
    return conv.messages[-1]


def totals(calls: int, tokens_in: int, tokens_out: int) -> dict[str, Any]:
    """Hermes' message.complete usage: the session's totals so far (all three lines)."""
    return {**USAGE_TICK, "calls": calls, "input": tokens_in, "output": tokens_out}


def test_each_reply_shows_the_tokens_it_used_not_the_sessions_totals() -> None:
    """Hermes sends the session's running totals with each reply: a chat's third reply read
    '7.6k in · 276 out' (three replies' worth) and a reply stopped before its model call
    finished repeated the one before (seen on 0.19 under Xvfb)."""
    from desktop.ui.render.usage import usage_line

    conv = Conversation("s1")
    conv.load_snapshot({"session_id": "r1", "messages": [], "running": False, "info": {}})
    first = _turn(conv, "one", totals(1, 2400, 92))
    second = _turn(conv, "two", totals(3, 7600, 276))  # a tool call between: two model calls
    stopped = _turn(conv, "thr", totals(3, 7600, 276), status="interrupted")
    assert usage_line(first.usage) == "2.4k in · 92 out · context 55k of 131k"
    assert usage_line(second.usage) == "5.2k in · 184 out · context 55k of 131k"
    assert usage_line(stopped.usage) == "context 55k of 131k", "no model call of it finished"
    assert conv.session_info().context_percent == 42  # the header's meter: the window's use
    # A turn whose start was not seen (a reconnect in the middle): its share is not known.
    conv.apply(ev("message.delta", text="four"))
    conv.apply(ev("message.complete", text="four", usage=totals(4, 9000, 300)))
    assert usage_line(conv.messages[-1].usage) == "context 55k of 131k"
    # The gateway restarted (its counters began again): all of the totals are this turn's.
    assert usage_line(_turn(conv, "five", totals(1, 1500, 40)).usage).startswith("1.5k in · 40")
    # The embedded gateway's usage is the reply's own.
    own = _turn(conv, "six", {"prompt_tokens": 800, "completion_tokens": 20, "model": "m"})
    assert usage_line(own.usage) == "800 in · 20 out"
