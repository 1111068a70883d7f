"""A reply's footer line (its time, and the tokens and context it used: message.complete usage),
the header's context use and the agent's task-list line (Hermes 0.22 session.usage and
todo.updated)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QLocale

from desktop.core.models import ChatMessage, Role, SessionInfo, TodoItem
from desktop.ui.render.dates import clock_time


def _count(value: Any) -> int | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return int(value)
    return None


def _short(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M".replace(".0M", "M")
    if n >= 10_000:
        return f"{n / 1000:.0f}k"
    if n >= 1000:
        return f"{n / 1000:.1f}k".replace(".0k", "k")
    return str(n)


def usage_line(usage: dict[str, Any]) -> str:
    """'5.6k in · 7 out · context 2.8k of 131k' from Hermes' usage fields; "" when none."""
    parts: list[str] = []
    tokens_in = _count(usage.get("input", usage.get("prompt_tokens")))
    tokens_out = _count(usage.get("output", usage.get("completion_tokens")))
    if tokens_in is not None:
        parts.append(f"{_short(tokens_in)} in")
    if tokens_out is not None:
        parts.append(f"{_short(tokens_out)} out")
    used, most = _count(usage.get("context_used")), _count(usage.get("context_max"))
    if used is not None and most:
        parts.append(f"context {_short(used)} of {_short(most)}")
    return " · ".join(parts)


def footer_text(msg: ChatMessage) -> str:
    """What a bubble's footer says: status, time and (replies) usage."""
    stamp = clock_time(msg.created_at) if msg.created_at else ""
    # How a reply that did not complete ended is said in words on its own line (reply_note).
    if msg.role is Role.ASSISTANT and msg.usage and not msg.streaming:
        used = usage_line(msg.usage)
        model = msg.usage.get("model")
        if isinstance(model, str) and model:
            used = f"{model} · {used}" if used else model  # which model wrote this reply
        stamp = f"{used} · {stamp}" if stamp and used else (used or stamp)
    if msg.role is Role.ASSISTANT and msg.duration is not None and not msg.streaming:
        took = f"took {took_text(msg.duration)}"
        stamp = f"{stamp} · {took}" if stamp else took
    return stamp


def took_text(seconds: float) -> str:
    """A turn's length: '0.4 s', '12 s', '1 min 5 s', '2 h 3 min'."""
    if seconds < 10:
        return f"{QLocale().toString(seconds, 'f', 1)} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if secs else f"{minutes} min"


def context_text(info: SessionInfo) -> tuple[str, str]:
    """The header's 'context 42 %' and its tooltip ('2.8k of 131k tokens'); ("", "") when
    the gateway said nothing of it."""
    if info.context_percent is None:
        # Asked and not given: the meter says it does not know, and why.
        return ("context —", info.context_note) if info.context_note else ("", "")
    tip = f"The model's context is {info.context_percent} % full"
    if info.context_used is not None and info.context_max:
        tip += f" ({_short(info.context_used)} of {_short(info.context_max)} tokens)"
    return f"context {info.context_percent} %", tip


_TODO_MARKS = {"completed": "✓", "in_progress": "▸", "cancelled": "✗", "pending": "○"}


def todo_text(todos: tuple[TodoItem, ...]) -> tuple[str, str]:
    """The line above the composer for the agent's task list: 'Tasks: 2 of 5 done · now:
    <the one in progress>', with every item in the tooltip; ("", "") when there is none.
    Cancelled items count neither as done nor as to do."""
    if not todos:
        return "", ""
    live = [t for t in todos if t.status != "cancelled"]
    done = sum(1 for t in live if t.status == "completed")
    text = f"Tasks: {done} of {len(live)} done"
    current = next((t for t in todos if t.status == "in_progress"), None)
    if current is not None:
        text += f" · now: {current.content}"
    tip = "\n".join(f"{_TODO_MARKS.get(t.status, '○')} {t.content}" for t in todos)
    return text, tip
