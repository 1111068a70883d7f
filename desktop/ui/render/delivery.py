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


def bubble_error_text(msg: ChatMessage) -> str:
    """The line under a prompt bubble that did not get through (or is being checked)."""
    if msg.delivery is DeliveryState.UNCONFIRMED:
        return CHECKING
    return failure_label(msg.delivery_error)
