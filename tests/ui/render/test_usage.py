"""A reply's footer: time, tokens in/out and context used of max."""

from __future__ import annotations

from desktop.core.models import ChatMessage, Role
from desktop.ui.render.usage import footer_text, took_text, usage_line


def test_usage_line_reads_hermes_usage_fields() -> None:
    usage = {"input": 5554, "output": 7, "context_used": 2796, "context_max": 131072}
    assert usage_line(usage) == "5.6k in · 7 out · context 2.8k of 131k"
    assert usage_line({"prompt_tokens": 12, "completion_tokens": 3}) == "12 in · 3 out"
    assert usage_line({}) == ""


def test_a_finished_reply_shows_its_usage_in_the_footer() -> None:
    msg = ChatMessage("m", Role.ASSISTANT, "hi", usage={"input": 10, "output": 2})
    assert footer_text(msg) == "10 in · 2 out"
    msg.streaming = True
    assert footer_text(msg) == ""  # while it streams the numbers are not known yet
    user = ChatMessage("u", Role.USER, "hi", usage={"input": 10})
    assert footer_text(user) == ""


def test_header_context_and_task_line_texts() -> None:
    from desktop.core.models import SessionInfo, TodoItem
    from desktop.ui.render.usage import context_text, todo_text

    info = SessionInfo(context_percent=42, context_used=55_000, context_max=131_072)
    assert context_text(info) == (
        "context 42 %",
        "The model's context is 42 % full (55k of 131k tokens)",
    )
    assert context_text(SessionInfo()) == ("", "")
    todos = (
        TodoItem("Read the config", "completed"),
        TodoItem("Fix the parser", "in_progress"),
        TodoItem("Run the tests"),
        TodoItem("Old idea", "cancelled"),
    )
    text, tip = todo_text(todos)
    assert text == "Tasks: 1 of 3 done · now: Fix the parser"
    assert tip.splitlines() == [
        "✓ Read the config",
        "▸ Fix the parser",
        "○ Run the tests",
        "✗ Old idea",
    ]
    assert todo_text(()) == ("", "")


def test_a_replys_footer_names_the_model_that_wrote_it() -> None:
    msg = ChatMessage(
        "a",
        Role.ASSISTANT,
        "hi",
        usage={"prompt_tokens": 10, "completion_tokens": 2, "model": "large"},
    )
    assert footer_text(msg) == "large · 10 in · 2 out"
    assert footer_text(ChatMessage("b", Role.ASSISTANT, "hi", usage={"model": "m"})) == "m"


def test_a_finished_reply_says_how_long_its_turn_took() -> None:
    msg = ChatMessage("m", Role.ASSISTANT, "hi", usage={"input": 10, "output": 2}, duration=75.0)
    assert footer_text(msg) == "10 in · 2 out · took 1 min 15 s"
    assert took_text(12.4) == "12 s" and took_text(7200 + 180) == "2 h 3 min"
    assert took_text(3.0) in ("3.0 s", "3,0 s")  # the decimal point is the locale's
    msg.streaming = True
    assert "took" not in footer_text(msg)
    assert footer_text(ChatMessage("n", Role.ASSISTANT, "hi")) == "", "no duration: nothing"
