"""A reply's footer line: its time, and the tokens and context it used (message.complete usage)."""

from __future__ import annotations

from typing import Any

from desktop.core.models import ChatMessage, Role
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
    if msg.role is Role.ASSISTANT and msg.status in ("error", "interrupted"):
        stamp = f"{msg.status} · {stamp}" if stamp else msg.status
    if msg.role is Role.ASSISTANT and msg.usage and not msg.streaming:
        used = usage_line(msg.usage)
        stamp = f"{used} · {stamp}" if stamp and used else (used or stamp)
    return stamp
