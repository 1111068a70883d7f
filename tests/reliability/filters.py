"""Inbound frame filters for the rig: what a frame is, and a gateway that looks legacy."""

from __future__ import annotations

import json
from typing import Any

from desktop.core.link.protocol import encode_event


def frame_kind(frame: str | bytes) -> tuple[str, dict[str, Any]]:
    """("reply", params) for a reply, (event type, params) for an event, ("", {}) otherwise."""
    try:
        msg = json.loads(frame)
    except (ValueError, TypeError):
        return "", {}
    params = msg.get("params") or {}
    return (params.get("type", "") if msg.get("method") == "event" else "reply"), params


def legacy_ready(frame: str | bytes) -> list[str | bytes]:
    """The ready payload without heartbeat, protocol and capabilities (hermes-agent 0.19)."""
    kind, params = frame_kind(frame)
    if kind == "gateway.ready":
        payload = params.get("payload", {})
        payload.pop("heartbeat", None)
        payload.pop("protocol", None)
        payload.pop("capabilities", None)
        return [encode_event("gateway.ready", payload)]
    return [frame]


def without_final_text(frame: str | bytes) -> list[str | bytes]:
    """message.complete without its full text: it can no longer heal what streamed before it."""
    kind, params = frame_kind(frame)
    if kind != "message.complete":
        return [frame]
    payload = dict(params.get("payload") or {})
    payload.pop("text", None)
    seq = params.get("seq")
    return [encode_event(kind, payload, session_id=params.get("session_id"), seq=seq)]
