"""Requests the agent blocks on (approval, clarify, sudo, secret): from events and snapshots."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from desktop.core.models import ApprovalRequest

# Hermes' approval.respond choices, in the order the card offers them.
APPROVAL_CHOICES = ("once", "session", "always", "deny")

# event type -> request kind
REQUEST_EVENTS = {
    "approval.request": "approval",
    "clarify.request": "clarify",
    "sudo.request": "sudo",
    "secret.request": "secret",
}
# A request the gateway gave up on (timed out); payload {request_id}.
EXPIRE_EVENTS = {
    "approval.expire",
    "clarify.expire",
    "sudo.expire",
    "secret.expire",
}
# Snapshot fields (0.20.1: pending_approval, pending_clarify) that carry a request still open.
SNAPSHOT_FIELDS = {
    "pending_approval": "approval",
    "pending_clarify": "clarify",
    "pending_sudo": "sudo",
    "pending_secret": "secret",
}
# Kinds whose snapshot presence is only told by status "waiting" on gateways without fields.
BLOCKING_KINDS = {"clarify", "sudo", "secret"}
# The stand-in shown when a turn waits on a request this app was never sent.
WAITING_KIND = "waiting"

_TITLES = {
    "approval": "Approve this command?",
    "clarify": "The agent asks",
    "sudo": "The agent needs your sudo password",
    "secret": "The agent needs a secret value",
}


def request_from(kind: str, payload: dict[str, Any], fallback_id: str) -> ApprovalRequest:
    """A request payload as the card shows it; `fallback_id` when the gateway gave none (0.19)."""
    raw_id = payload.get("request_id") or payload.get("id")
    request_id = str(raw_id) if raw_id else fallback_id
    if kind == "approval":
        title = _str(payload.get("command")) or _str(payload.get("title"))
        detail = _str(payload.get("description")) or _str(payload.get("detail"))
    elif kind == "clarify":
        title = _str(payload.get("question")) or _str(payload.get("title"))
        detail = _str(payload.get("detail"))
    elif kind == "secret":
        env = _str(payload.get("env_var"))
        title = _str(payload.get("prompt")) or (f"Value for {env}" if env else "")
        detail = f"Stored by the agent as {env}" if env else ""
    else:
        title = _str(payload.get("prompt"))
        detail = ""
    choices = payload.get("choices") or payload.get("options") or ()
    names = tuple(str(c) for c in choices) if isinstance(choices, list | tuple) else ()
    if kind == "approval":
        # Only choices Hermes understands, in a stable order; none given means all four.
        names = tuple(c for c in APPROVAL_CHOICES if c in names) or APPROVAL_CHOICES
        if "deny" not in names:
            names = (*names, "deny")
    return ApprovalRequest(
        request_id=request_id,
        kind=kind,
        title=title or _TITLES.get(kind, "The agent asks"),
        detail=detail,
        choices=names,
        server_id=bool(raw_id),
    )


def snapshot_requests(snapshot: dict[str, Any], key: str) -> list[ApprovalRequest]:
    """The requests an activate/resume snapshot says are still open."""
    found: list[ApprovalRequest] = []
    for field, kind in SNAPSHOT_FIELDS.items():
        for item in _items(snapshot.get(field)):
            found.append(request_from(kind, item, f"{key}:{field}:{len(found)}"))
    return found


def reports_pending(snapshot: dict[str, Any]) -> bool:
    """Whether the snapshot carries any pending-request field (absent on 0.19)."""
    return any(field in snapshot for field in SNAPSHOT_FIELDS)


def waiting_request(key: str) -> ApprovalRequest:
    """What a turn shows when it waits on an answer this app was never sent (0.19)."""
    return ApprovalRequest(
        request_id=f"{key}:waiting",
        kind=WAITING_KIND,
        title="The agent is waiting for an answer this app cannot show",
        detail=(
            "It asked while this app was disconnected, and this gateway does not send the "
            "question again. Stop the turn to release it, then ask again."
        ),
        choices=("Stop the turn",),
    )


def _items(value: Any) -> Iterable[dict[str, Any]]:
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


def _str(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
