"""How a reply ends (complete, stopped, interrupted, failed) as the reducer folds it in."""

from __future__ import annotations

from typing import Any

from desktop.core.chats import reply_state as rs
from desktop.core.chats.conversation import Conversation
from desktop.core.link.protocol import Event
from desktop.core.models import Role


def ev(etype: str, **payload: Any) -> Event:
    return Event(type=etype, session_id="r", payload=payload)


def test_an_error_then_the_turns_end_is_one_failed_bubble() -> None:
    conv = Conversation("k")
    conv.apply(ev("message.start"))
    conv.apply(ev("error", message="cannot reach api.example.com"))
    conv.apply(ev("message.complete", text="", status="error"))
    [reply] = conv.messages
    assert (reply.role, reply.status, reply.cause) == (
        Role.ASSISTANT,
        "error",
        "cannot reach api.example.com",
    )
    assert rs.state_text(reply) == "Failed: cannot reach api.example.com"


def test_hermes_error_text_is_the_cause_not_the_reply() -> None:
    conv = Conversation("k")
    conv.apply(ev("message.start"))
    conv.apply(ev("message.delta", text="Partial"))
    conv.apply(ev("message.complete", text="Error: OpenAI refused the key", status="error"))
    [reply] = conv.messages
    assert (reply.text, reply.status, reply.cause) == ("Partial", "error", "OpenAI refused the key")


def test_an_interrupt_the_user_asked_for_reads_stopped() -> None:
    conv = Conversation("k")
    conv.apply(ev("message.start"))
    conv.apply(ev("message.delta", text="word1 word2"))
    conv.stop_requested()
    conv.apply(ev("message.complete", text="word1 word2", status="interrupted"))
    assert conv.messages[0].status == "stopped"
    assert rs.state_text(conv.messages[0]) == "Stopped by you"
    conv.apply(ev("message.start"))
    conv.apply(ev("message.complete", text="again", status="interrupted"))
    assert conv.messages[1].status == "interrupted", "the next turn's interruption is not yours"


def test_a_shorter_interrupted_history_row_keeps_every_shown_word() -> None:
    conv = Conversation("k")
    conv.load_snapshot({"messages": [{"role": "user", "content": "q"}], "running": False})
    conv.apply(ev("message.start"))
    conv.apply(ev("message.delta", text="word1 word2 word3"))
    # The gateway died and came back: its history saved less than was shown.
    history = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "word1", "status": "interrupted"},
    ]
    conv.load_snapshot({"messages": history, "running": False})
    reply = conv.messages[-1]
    assert (reply.text, reply.status) == ("word1 word2 word3", "interrupted")
    assert not reply.streaming
    assert rs.state_text(reply) == f"Interrupted: {rs.GATEWAY_WENT_AWAY}"


def test_a_reply_that_went_on_while_the_link_was_down_keeps_its_time_and_thinking() -> None:
    """Hermes 0.19 keeps no times in its history: a reply cut mid-stream by a lost link came
    back whole after the reconnect without the time it started here (its bubble showed
    none, its neighbours did)."""
    now = [100.0]
    conv = Conversation("k", now=lambda: now[0])
    conv.load_snapshot({"messages": [{"role": "user", "content": "q"}], "running": False})
    conv.apply(ev("message.start"))
    conv.apply(ev("reasoning.delta", text="Let me think."))
    conv.apply(ev("message.delta", text="Here is the "))
    now[0] = 160.0  # the link is back a minute later; the turn went on meanwhile
    history = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "Here is the whole answer."},
    ]
    conv.load_snapshot({"messages": history, "running": False})
    reply = conv.messages[-1]
    assert (reply.text, reply.created_at) == ("Here is the whole answer.", 100.0)
    assert reply.thinking == "Let me think." and not reply.streaming
    assert rs.state_text(reply) == ""
    # Words that only begin the same are not the same reply: nothing carries over.
    conv.apply(ev("message.start"))
    conv.apply(ev("message.delta", text="Another "))
    history += [{"role": "user", "content": "q2"}, {"role": "assistant", "content": "Other."}]
    conv.load_snapshot({"messages": history, "running": False})
    assert conv.messages[-1].created_at == 0.0


def test_a_history_row_marked_interrupted_reads_interrupted() -> None:
    conv = Conversation("k")
    history = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "half", "status": "interrupted"},
    ]
    conv.load_snapshot({"messages": history, "running": False})
    assert conv.messages[-1].status == "interrupted"


def test_a_reply_the_gateways_history_lost_stays_with_its_words_marked_interrupted() -> None:
    """Hermes keeps no partial answer: after its restart the history ends with the prompt."""
    conv = Conversation("k")
    conv.load_snapshot({"messages": [{"role": "user", "content": "q"}], "running": False})
    conv.apply(ev("message.start"))
    conv.apply(ev("message.delta", text="word1 word2"))
    conv.load_snapshot({"messages": [{"role": "user", "content": "q"}], "running": False})
    assert [(m.role, m.text, m.status) for m in conv.messages] == [
        (Role.USER, "q", "complete"),
        (Role.ASSISTANT, "word1 word2", "interrupted"),
    ]
    assert rs.state_text(conv.messages[-1]) == f"Interrupted: {rs.GATEWAY_WENT_AWAY}"


def test_a_failed_reply_the_history_lacks_stays_after_its_prompt_when_a_turn_follows() -> None:
    """Hermes 0.19 keeps a failed turn's prompt and not its reply: after a rebuild from that
    history (a reconnect, the gateway's restart) the failure still reads under its prompt."""
    conv = Conversation("k")
    conv.load_snapshot({"messages": [{"role": "user", "content": "q"}], "running": False})
    conv.apply(ev("message.start"))
    conv.apply(ev("error", message="HTTP 401: the provider refused the key"))
    rows = [{"role": "user", "content": "q"}, {"role": "user", "content": "next"}]
    conv.load_snapshot({"messages": rows, "running": False})
    conv.load_snapshot({"messages": [*rows, {"role": "assistant", "content": "a"}]})
    got = [(m.role, m.text, m.status) for m in conv.messages]
    assert got == [
        (Role.USER, "q", "complete"),
        (Role.ASSISTANT, "", "error"),
        (Role.USER, "next", "complete"),
        (Role.ASSISTANT, "a", "complete"),
    ], got
