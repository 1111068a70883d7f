"""The prompt a reply answered, and what a finished reply announces (no Qt)."""

from __future__ import annotations

from desktop.core.chats.turns import FINISHED_TITLE, finished_reply, prompt_before
from desktop.core.models import ChatMessage, Role, SessionSummary


def _chat() -> list[ChatMessage]:
    return [
        ChatMessage("u1", Role.USER, "first question"),
        ChatMessage("a1", Role.ASSISTANT, "first answer"),
        ChatMessage("u2", Role.USER, "second question"),
        ChatMessage("t1", Role.TOOL, "tool output"),
        ChatMessage("a2", Role.ASSISTANT, "second answer"),
    ]


def test_regenerating_a_reply_resends_the_prompt_right_above_it() -> None:
    chat = _chat()
    assert prompt_before(chat, "a2") is chat[2]  # past the tool row, not the first prompt
    assert prompt_before(chat, "a1") is chat[0]


def test_nothing_to_regenerate_without_a_prompt_above_or_an_unknown_reply() -> None:
    chat = _chat()
    assert prompt_before(chat, "u1") is None
    assert prompt_before(chat, "gone") is None
    assert prompt_before([], "a1") is None


def test_a_finished_reply_in_the_open_chat_announces_its_own_text() -> None:
    summary = SessionSummary("s1", "Quokkas", preview="second ans…")
    assert finished_reply(summary, _chat()) == ("Quokkas", "second answer")


def test_a_finished_reply_elsewhere_announces_the_list_preview() -> None:
    summary = SessionSummary("s2", "Lisbon", preview="Day 3: Sintra")
    assert finished_reply(summary, None) == ("Lisbon", "Day 3: Sintra")
    assert finished_reply(summary, [ChatMessage("u", Role.USER, "hi")]) == (
        "Lisbon",
        "Day 3: Sintra",
    )
    assert finished_reply(None, None) == (FINISHED_TITLE, "")
    assert finished_reply(SessionSummary("s3", ""), None) == (FINISHED_TITLE, "")
