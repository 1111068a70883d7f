"""How a reply ended, in the few states a person understands, and what its bubble says of it."""

from __future__ import annotations

from desktop.core.models import ChatMessage, Role

COMPLETE = "complete"
STOPPED = "stopped"  # the user pressed Stop (or Esc)
INTERRUPTED = "interrupted"  # the gateway or the app went away mid-reply
FAILED = "error"  # the provider or the gateway failed; `cause` says how
ENDED = frozenset({COMPLETE, STOPPED, INTERRUPTED, FAILED})
UNFINISHED = frozenset({STOPPED, INTERRUPTED, FAILED})

# Causes of an interruption the client names itself (the gateway's own wording is used as is).
GATEWAY_WENT_AWAY = "the gateway went away before the reply finished"
APP_WENT_AWAY = "the app closed before the reply finished"
# Hermes ends a failed turn with message.complete{text: "Error: <cause>", status: "error"}.
HERMES_ERROR_PREFIX = "Error: "


def unfinished(msg: ChatMessage) -> bool:
    """A reply that ended without completing (and offers Retry)."""
    return msg.role is Role.ASSISTANT and not msg.streaming and msg.status in UNFINISHED


def state_text(msg: ChatMessage) -> str:
    """The line a reply that did not complete carries: its state and, in words, why."""
    if not unfinished(msg):
        return ""
    if msg.status == STOPPED:
        return "Stopped by you"
    if msg.status == INTERRUPTED:
        return f"Interrupted: {msg.cause}" if msg.cause else "Interrupted before it finished"
    return f"Failed: {msg.cause}" if msg.cause else "Failed"


def longer_shown(shown: str, stored: str) -> str:
    """For an unfinished reply, the longest text seen wins over a shorter copy of it (either
    side may have more: the gateway saved less than it sent, or had more than arrived)."""
    return shown if len(shown) > len(stored) and shown.startswith(stored) else stored
