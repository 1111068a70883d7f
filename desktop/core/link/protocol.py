"""Sans-I/O JSON-RPC codec for the gateway protocol: requests, replies and events."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from desktop.common.codec import dumps, loads
from desktop.common.limits import MAX_JSON_DEPTH
from desktop.common.methods import SERVER_REQUEST_EVENT

RequestId = int | str


@dataclass(frozen=True, slots=True)
class ErrorObject:
    """The `error` member of a JSON-RPC error reply."""

    code: int
    message: str
    data: Any = None


@dataclass(frozen=True, slots=True)
class Reply:
    """A reply to one of our requests: exactly one of `result` / `error` is meaningful."""

    id: RequestId
    result: Any = None
    error: ErrorObject | None = None


class Event(NamedTuple):
    """A server-pushed `event` notification; treat `payload` and `raw` as read-only.

    Tuple-backed rather than a dataclass: one is built per frame and a tuple is the cheapest
    immutable value to build.
    """

    type: str
    session_id: str | None = None
    payload: dict[str, Any] = {}  # shared default: never mutated
    seq: int | None = None
    raw: dict[str, Any] = {}  # shared default: never mutated


@dataclass(frozen=True, slots=True)
class Invalid:
    """A frame that is not valid JSON-RPC for this protocol; `reason` is safe to log."""

    reason: str


@dataclass(frozen=True, slots=True)
class ServerRequest:
    """A request the gateway asks of us (Hermes 0.22: `approval`, `clarify`, `sudo`, `secret`,
    ids `srq-…`); answered by a reply frame to `id` (`encode_reply`), never by a call."""

    id: RequestId
    method: str
    params: dict[str, Any]

    @property
    def session_id(self) -> str | None:
        """The runtime id of the session that asks (`params.session_id`)."""
        sid = self.params.get("session_id")
        return sid if isinstance(sid, str) and sid else None

    def as_event(self) -> Event:
        """The request as a session event (`SERVER_REQUEST_EVENT`): routed like any event
        by its session id, with the payload a snapshot's `open_requests` items have."""
        payload = {"id": self.id, "method": self.method, "params": self.params}
        return Event(SERVER_REQUEST_EVENT, self.session_id, payload, None, payload)


Frame = Reply | Event | ServerRequest | Invalid


def encode_request(request_id: RequestId, method: str, params: dict[str, Any] | None = None) -> str:
    """One request as a compact JSON text frame (params omitted when None)."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        msg["params"] = params
    return dumps(msg)


def encode_reply(request_id: RequestId, result: Any) -> str:
    """A result reply (used by test peers and the embedded gateway)."""
    return dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


def encode_error(request_id: RequestId, code: int, message: str) -> str:
    """An error reply: the client refusing a server->client request it cannot answer."""
    return dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def encode_event(
    type_: str,
    payload: dict[str, Any] | None = None,
    *,
    session_id: str | None = None,
    seq: int | None = None,
) -> str:
    """An `event` notification frame."""
    params: dict[str, Any] = {"type": type_}
    if session_id is not None:
        params["session_id"] = session_id
    if payload is not None:
        params["payload"] = payload
    if seq is not None:
        params["seq"] = seq
    return dumps({"jsonrpc": "2.0", "method": "event", "params": params})


def _is_id(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _decode_reply(msg: dict[str, Any]) -> Frame:
    rid = msg["id"]
    if not _is_id(rid):
        return Invalid("reply id is not an int or string")
    has_result, has_error = "result" in msg, "error" in msg
    if has_result == has_error:
        return Invalid("reply needs exactly one of result/error")
    if has_result:
        return Reply(rid, result=msg["result"])
    err = msg["error"]
    if not isinstance(err, dict) or not _is_int(err.get("code")):
        return Invalid("error object without an integer code")
    message = err.get("message")
    return Reply(rid, error=ErrorObject(err["code"], str(message or ""), err.get("data")))


def _decode_server_request(msg: dict[str, Any]) -> Frame:
    method = msg["method"]
    if not isinstance(method, str) or not method:
        return Invalid("server request without a method name")
    if "id" not in msg or not _is_id(msg["id"]):
        return Invalid("unexpected notification from the server")
    params = msg.get("params")
    if params is None:
        params = {}
    elif not isinstance(params, dict):
        return Invalid("server request params are not an object")
    return ServerRequest(msg["id"], method, params)


def _decode_event(msg: dict[str, Any]) -> Frame:
    params = msg.get("params")
    if not isinstance(params, dict):
        return Invalid("event without params object")
    type_ = params.get("type")
    if not isinstance(type_, str) or not type_:
        return Invalid("event without a type")
    session_id = params.get("session_id")
    if session_id is not None and not isinstance(session_id, str):
        return Invalid("event session_id is not a string")
    payload = params.get("payload")
    if payload is None:
        payload = {}
    elif not isinstance(payload, dict):
        return Invalid("event payload is not an object")
    seq = params.get("seq")
    if seq is not None and not _is_int(seq):
        return Invalid("event seq is not an integer")
    return Event(type_, session_id, payload, seq, msg)


def _may_escape_a_surrogate(text: str | bytes) -> bool:
    """True when the JSON text may escape a surrogate (any `\\uDxxx`; two substring scans)."""
    if isinstance(text, bytes):
        return b"\\ud" in text or b"\\uD" in text
    return "\\ud" in text or "\\uD" in text


class _TooDeep(Exception):
    """A frame nested deeper than MAX_JSON_DEPTH."""


def _without_lone_surrogates(value: Any, depth: int = 0) -> Any:
    # An explicit depth limit, not Python's recursion limit: the verdict on a frame must not
    # depend on how deep the caller's stack is or on what another module set the limit to.
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value
    if depth >= MAX_JSON_DEPTH:
        if isinstance(value, dict | list):
            raise _TooDeep
        return value
    if isinstance(value, dict):
        return {
            _without_lone_surrogates(k, depth): _without_lone_surrogates(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_without_lone_surrogates(v, depth + 1) for v in value]
    return value


def decode_frame(text: str | bytes) -> Frame:
    """Decode one text frame (surrounding whitespace is tolerated); never raises."""
    try:
        msg = loads(text)
    except (ValueError, RecursionError):
        return Invalid("malformed JSON")
    if _may_escape_a_surrogate(text):
        # A gateway may escape a lone surrogate (Hermes writes ASCII JSON): it could be
        # neither stored nor sent on, so it becomes U+FFFD here, once, for the whole client.
        try:
            msg = _without_lone_surrogates(msg)
        except (_TooDeep, RecursionError):
            # Hundreds of levels deep (no real frame is): refused like malformed JSON.
            return Invalid("frame nested too deeply")
    # Hot path: a well-formed event, checked on exactly the fields an Event carries. The
    # decoder only makes plain dict/str/int, so `type() is` is exact (and keeps bools out).
    if type(msg) is dict and msg.get("method") == "event":
        params = msg.get("params")
        if type(params) is dict and "id" not in msg and msg.get("jsonrpc") == "2.0":
            type_ = params.get("type")
            session_id = params.get("session_id")
            payload = params.get("payload")
            seq = params.get("seq")
            if (
                type(type_) is str
                and type_
                and type(payload) is dict
                and (session_id is None or type(session_id) is str)
                and (seq is None or type(seq) is int)
            ):
                return _new_event(Event, (type_, session_id, payload, seq, msg))
    return decode_checked(msg)


# Builds an Event without NamedTuple's Python-level __new__ (one call less per frame).
_new_event = tuple.__new__


def decode_checked(msg: Any) -> Frame:
    """Any decoded frame validated field by field, with a reason: what `decode_frame` does for
    every frame that is not a plain event (its fast path must agree with this)."""
    if not isinstance(msg, dict):
        return Invalid("frame is not a JSON object")
    if msg.get("jsonrpc") != "2.0":
        return Invalid("not JSON-RPC 2.0")
    if "id" in msg and msg["id"] is not None and "method" not in msg:
        return _decode_reply(msg)
    if msg.get("method") == "event" and "id" not in msg:
        return _decode_event(msg)
    if "method" in msg:
        return _decode_server_request(msg)
    return Invalid("neither a reply nor an event")
