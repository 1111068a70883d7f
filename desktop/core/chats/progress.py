"""What a running agent says about its own progress: context use and its task list.

Hermes 0.22 sends `session.usage {usage}` ticks while a turn runs (and `message.complete`
carries the final usage), and `todo.updated {todos, revision}` after its todo tool ran; a
snapshot repeats both (`info.usage`, `todo_state`). Read field by field: a gateway that sends
none of them simply shows none.
"""

from __future__ import annotations

from typing import Any

from desktop.core.models import TodoItem

TODO_STATUSES = frozenset({"pending", "in_progress", "completed", "cancelled"})


def _count(value: Any) -> int | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return int(value)
    return None


def context_of(usage: dict[str, Any]) -> tuple[int | None, int | None, int | None]:
    """(percent, used, max) of the model's context from a usage dict; None where unknown.

    0.22 says `context_percent` itself (the gateway's own rounding, shown as it says);
    a gateway that only gives `context_used`/`context_max` gets it computed here.
    """
    used, most = _count(usage.get("context_used")), _count(usage.get("context_max"))
    percent = _count(usage.get("context_percent"))
    if percent is None and used is not None and most:
        percent = round(used / most * 100)
    if percent is not None:
        percent = min(100, percent)
    return percent, used, most or None


def todo_state(payload: Any) -> tuple[tuple[TodoItem, ...], int] | None:
    """`(items, revision)` from a `todo.updated` payload or a snapshot's `todo_state`;
    None when it is not one (an item without text is skipped, an unknown status is pending)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("todos"), list):
        return None
    revision = payload.get("revision")
    rev = revision if isinstance(revision, int) and not isinstance(revision, bool) else 0
    items: list[TodoItem] = []
    for raw in payload["todos"]:
        if not isinstance(raw, dict):
            continue
        content = raw.get("content")
        if not isinstance(content, str) or not content.strip():
            continue
        status = raw.get("status")
        status = status if isinstance(status, str) and status in TODO_STATUSES else "pending"
        items.append(TodoItem(" ".join(content.split()), status))
    return tuple(items), rev
