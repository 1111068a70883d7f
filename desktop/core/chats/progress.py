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


# Hermes' usage is the session's running totals (`_get_usage`: its agent's counters since the
# gateway built it, each model call added): these fields. The embedded gateway's is the
# reply's own (`prompt_tokens`, `completion_tokens`).
_TOTALS = ("input", "output", "reasoning", "prompt", "completion", "total", "calls")


def reply_usage(usage: dict[str, Any], base: dict[str, Any] | None) -> dict[str, Any]:
    """What one reply used, from its `message.complete` usage.

    Hermes sends the session's totals so far (every reply showed them as its own: the third
    reply of a chat read three replies' tokens, a stopped one the turn's before it): the
    reply's share is what they grew by since its turn began (`base`: the totals then, None
    when the turn began unseen, as after a reconnect mid-turn). Its counts go when that is
    not known, or when no model call of the turn finished (stopped before one did); the
    context figures are the window's now, kept. A usage without the totals is the reply's.
    """
    if "calls" not in usage:
        return dict(usage)
    own = {k: v for k, v in usage.items() if k not in _TOTALS}
    if base is None or not _grown(usage, base, "calls"):
        return own
    for name in ("input", "output"):
        grown = _grown(usage, base, name)
        if grown is not None:
            own[name] = grown
    return own


def _grown(usage: dict[str, Any], base: dict[str, Any], name: str) -> int | None:
    now, then = _count(usage.get(name)), _count(base.get(name)) or 0
    if now is None:
        return None
    # Totals below the base: the gateway restarted (its counters began again), all of them
    # are this turn's.
    return now - then if now >= then else now


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
