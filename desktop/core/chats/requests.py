"""Requests the agent blocks on (approval, clarify, sudo, secret): from events and snapshots.

Two ways of asking exist. Hermes 0.19 and 0.20.1 send events (`approval.request`, ...) that are
answered by calls (`approval.respond`, ...); 0.20.1 lists the open ones in its snapshots
(`pending_approval`, `pending_clarify`). Hermes 0.22 (and 0.21.5) send server->client JSON-RPC
requests (id `srq-…`, handed on as `server.request` events), answered by a reply to that id,
listed after a reconnect in the snapshot's `open_requests` and withdrawn by `request.cancel`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from desktop.common.methods import SERVER_REQUEST_KINDS
from desktop.core.models import ApprovalRequest, Question

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
# Snapshot field (0.22, also `session.events.since`): `[{id, method, params}]` still open.
OPEN_REQUESTS = "open_requests"
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
        detail = _str(payload.get("command"))  # 0.22's sudo says what it is for
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


def server_request(item: dict[str, Any]) -> ApprovalRequest | None:
    """A server->client request (`{id, method, params}`, live or from `open_requests`) as the
    card shows it, keyed by its JSON-RPC id; None for a kind this app does not show."""
    srq_id, kind, params = item.get("id"), item.get("method"), item.get("params")
    if not isinstance(srq_id, str | int) or isinstance(srq_id, bool) or not srq_id:
        return None
    if kind not in SERVER_REQUEST_KINDS or not isinstance(params, dict):
        return None
    reply_to = str(srq_id)
    questions = _questions(params) if kind == "clarify" else ()
    shown = params
    if len(questions) == 1:
        # One question: the card shows it as the title, its choices as buttons.
        only = questions[0]
        shown = {**params, "question": only.text, "choices": list(only.choices)}
    elif questions:
        shown = {**params, "question": f"The agent asks {len(questions)} questions"}
    base = request_from(str(kind), {**shown, "request_id": reply_to}, reply_to)
    gateway_id = params.get("request_id")
    return ApprovalRequest(
        request_id=reply_to,
        kind=base.kind,
        title=base.title,
        detail=base.detail,
        choices=base.choices,
        reply_to=reply_to,
        gateway_id=gateway_id if isinstance(gateway_id, str) else "",
        questions=questions,
    )


def snapshot_requests(snapshot: dict[str, Any], key: str) -> list[ApprovalRequest]:
    """The requests an activate/resume snapshot says are still open.

    0.22 names an open approval twice (`pending_approval` and, as a request, `open_requests`):
    it is shown once, as the request (answered by a reply to its id).
    """
    found: list[ApprovalRequest] = []
    for item in _items(snapshot.get(OPEN_REQUESTS)):
        request = server_request(item)
        if request is not None:
            found.append(request)
    asked = {r.gateway_id for r in found if r.gateway_id}
    for field, kind in SNAPSHOT_FIELDS.items():
        for item in _items(snapshot.get(field)):
            if item.get("request_id") in asked:
                continue
            found.append(request_from(kind, item, f"{key}:{field}:{len(found)}"))
    return found


def reports_pending(snapshot: dict[str, Any]) -> bool:
    """Whether the snapshot carries any pending-request field (absent on 0.19)."""
    return OPEN_REQUESTS in snapshot or any(field in snapshot for field in SNAPSHOT_FIELDS)


def clarify_result(request: ApprovalRequest, answer: object) -> dict[str, Any]:
    """The reply to a clarify server request: `{answers: {qid: text}}` (a multi-select answer
    is a JSON list of the picked choices, as Hermes parses it), or `{answer}` for 0.21.5's
    single-question form. `answer` is one text (the first question's) or `{qid: text}`."""
    if not request.questions:
        return {"answer": str(answer)}
    if isinstance(answer, dict):
        answers = {str(q): str(a) for q, a in answer.items()}
    else:
        answers = {request.questions[0].qid: str(answer)}
    return {"answers": answers}


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


def _questions(params: dict[str, Any]) -> tuple[Question, ...]:
    out: list[Question] = []
    for item in _items(params.get("questions")):
        text = _str(item.get("question"))
        qid = item.get("qid")
        if not text or not isinstance(qid, str):
            continue
        choices = item.get("choices")
        names = tuple(str(c) for c in choices) if isinstance(choices, list) else ()
        multi = item.get("multi_select") is True and bool(names)
        out.append(Question(qid=qid, text=text, choices=names, multi_select=multi))
    return tuple(out)


def _items(value: Any) -> Iterable[dict[str, Any]]:
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


def _str(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
