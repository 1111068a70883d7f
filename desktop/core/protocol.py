"""Sans-I/O JSON-RPC codec for the gateway protocol: requests, replies, events, capabilities."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from desktop.core.errors import ProtocolError

# The newest `gateway.ready.payload.protocol.version` this client understands.
PROTOCOL_VERSION = 1
READY_EVENT = "gateway.ready"

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


@dataclass(frozen=True, slots=True)
class Event:
    """A server-pushed `event` notification."""

    type: str
    session_id: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    seq: int | None = None
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Invalid:
    """A frame that is not valid JSON-RPC for this protocol; `reason` is safe to log."""

    reason: str


Frame = Reply | Event | Invalid


def encode_request(request_id: RequestId, method: str, params: dict[str, Any] | None = None) -> str:
    """One request as a compact JSON text frame (params omitted when None)."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False)


def encode_reply(request_id: RequestId, result: Any) -> str:
    """A result reply (used by test peers and the embedded gateway)."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}, separators=(",", ":"))


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
    msg = {"jsonrpc": "2.0", "method": "event", "params": params}
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False)


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


def decode_frame(text: str) -> Frame:
    """Decode one text frame (a trailing newline is tolerated); never raises."""
    try:
        msg = json.loads(text.rstrip("\r\n"))
    except (ValueError, RecursionError):
        return Invalid("malformed JSON")
    if not isinstance(msg, dict):
        return Invalid("frame is not a JSON object")
    if msg.get("jsonrpc") != "2.0":
        return Invalid("not JSON-RPC 2.0")
    if "id" in msg and msg["id"] is not None and "method" not in msg:
        return _decode_reply(msg)
    if msg.get("method") == "event" and "id" not in msg:
        return _decode_event(msg)
    if "method" in msg:
        return Invalid("unexpected request from the server")
    return Invalid("neither a reply nor an event")


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a gateway advertised in `gateway.ready`, read field by field (never by version)."""

    heartbeat: bool = False
    protocol_version: int | None = None
    event_replay: bool = False
    client_turn_id: bool = False
    submission_ref: bool = False
    stream_ownership: bool = False
    replay_epoch: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_ready(cls, payload: dict[str, Any]) -> Capabilities:
        """Parse a ready payload; raises ProtocolError for a protocol version we do not know."""
        caps = payload.get("capabilities")
        caps = caps if isinstance(caps, dict) else {}
        version: int | None = None
        proto = payload.get("protocol")
        if isinstance(proto, dict) and "version" in proto:
            raw_version = proto["version"]
            if not _is_int(raw_version):
                raise ProtocolError(f"gateway protocol version is not an integer: {raw_version!r}")
            version = raw_version
            if version > PROTOCOL_VERSION or version < 1:
                raise ProtocolError(
                    f"gateway speaks protocol {version}, we know 1..{PROTOCOL_VERSION}"
                )
        epoch = payload.get("replay_epoch", caps.get("replay_epoch"))
        return cls(
            heartbeat=payload.get("heartbeat") is True,
            protocol_version=version,
            event_replay=caps.get("event_replay") is True,
            client_turn_id=caps.get("client_turn_id") is True,
            submission_ref=payload.get("submission_ref") is True
            or caps.get("submission_ref") is True,
            stream_ownership=payload.get("stream_ownership") is True
            or caps.get("stream_ownership") is True,
            replay_epoch=None if epoch is None else str(epoch),
            raw=dict(payload),
        )
