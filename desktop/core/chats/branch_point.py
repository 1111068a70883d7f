"""Where "Branch from here" cuts a chat, counted the way the gateway counts.

Hermes' `session.branch {count}` keeps the first `count` user and assistant rows *with text*
of its own history (0.20.1 and 0.22: `_visible_branch_history`, then `history[:count]`). A
bubble on screen is not a row: one reply is every assistant and tool row of its turn, and an
assistant row that said something before calling a tool ("Let me look.") is a row Hermes
counts but not a bubble of its own. Counting bubbles cuts such a branch inside the reply it
was asked to keep. So the count is taken on the gateway's rows: the chosen bubble is found
among the bubbles those rows make, and every row up to the end of its turn is counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from desktop.core.models import ChatMessage, Role

_COUNTED = {Role.USER.value, Role.ASSISTANT.value}
_REPLY_ROWS = {Role.ASSISTANT.value, Role.TOOL.value}


def _role(row: Any) -> str:
    role = row.get("role") if isinstance(row, dict) else None
    return role if isinstance(role, str) else ""


def _counted(row: Any) -> bool:
    """A row Hermes' branch keeps: user or assistant, with text."""
    if _role(row) not in _COUNTED:
        return False
    for name in ("text", "content"):
        value = row.get(name)
        if isinstance(value, str) and value.strip():
            return True
    return False


def turn_end(rows: Sequence[Any], position: int) -> int:
    """The end (exclusive) of the bubble whose first row is `position`: one row for a user
    message, every assistant and tool row that follows for a reply (as bubbles are built)."""
    end = position + 1
    if _role(rows[position]) in _REPLY_ROWS:
        while end < len(rows) and _role(rows[end]) in _REPLY_ROWS:
            end += 1
    return end


def branch_count(rows: Sequence[Any], position: int) -> int | None:
    """`session.branch`'s count that keeps everything up to the end of the bubble starting at
    row `position`; None when that is the whole history (the gateway's default)."""
    end = turn_end(rows, position)
    count = sum(1 for row in rows[:end] if _counted(row))
    total = sum(1 for row in rows if _counted(row))
    return None if count >= total else count


def matching_bubble(
    shown: Sequence[ChatMessage], message_id: str, rebuilt: Sequence[ChatMessage]
) -> ChatMessage | None:
    """The bubble of `rebuilt` (made from the gateway's rows) that is `message_id` of `shown`.

    Matched by role and text, counted from the end: what is shown may be only the end of the
    history, and a reply streamed live has an id of its own, not its row's. The n-th last
    shown bubble with those words is the n-th last rebuilt one.
    """
    chosen = next((m for m in shown if m.id == message_id), None)
    if chosen is None:
        return None

    def same(m: ChatMessage) -> bool:
        return m.role is chosen.role and m.text.strip() == chosen.text.strip()

    later = [m for m in shown[shown.index(chosen) + 1 :] if same(m)]
    candidates = [m for m in rebuilt if same(m)]
    if len(candidates) <= len(later):
        return None
    return candidates[len(candidates) - 1 - len(later)]
