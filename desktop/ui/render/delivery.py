"""How a prompt that did not get through is labelled: its cause, not a generic warning."""

from __future__ import annotations

from desktop.core.delivery.outbox import NOT_CONFIRMED
from desktop.core.models import ChatMessage, DeliveryState

CHECKING = "Checking whether the gateway got this…"


def failure_label(error: str) -> str:
    """ "Delivery not confirmed" only for a prompt that may have gone out and provably did not
    arrive; one refused or never sent says "Not sent: <cause>"."""
    if not error or error == NOT_CONFIRMED:
        return "Delivery not confirmed"
    return f"Not sent: {error}"


def has_note(msg: ChatMessage) -> bool:
    """Whether a prompt bubble carries a line under it: failed, being checked, or held."""
    if msg.delivery in (DeliveryState.FAILED, DeliveryState.UNCONFIRMED):
        return True
    return msg.delivery is DeliveryState.PENDING and bool(msg.delivery_error)


def bubble_error_text(msg: ChatMessage) -> str:
    """The line under a prompt bubble that did not get through (or is being checked, or waits
    for the running reply before it is sent)."""
    if msg.delivery is DeliveryState.UNCONFIRMED:
        return CHECKING
    if msg.delivery is DeliveryState.PENDING:
        return msg.delivery_error  # "Queued: sends when the reply finishes", or nothing
    return failure_label(msg.delivery_error)
