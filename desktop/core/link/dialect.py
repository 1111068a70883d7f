"""What one connected gateway does: read field by field from `gateway.ready`, then learned from
its answers on that connection (a method it lacks, a param it refuses). Never a version guess.

The real lines differ like this (observed on the wire; docs/protocol.md has the frames):

- heartbeat (`gateway.ping`): 0.22 and embedded; not 0.19 or 0.20.1.
- event replay (`seq`, `session.events.since`): embedded (advertised), 0.22 (`replay_epoch` only).
- `omit_messages` on activate/resume: ignored by 0.19; honoured by 0.20.1 and 0.22, which say
  `messages_omitted: true`; honoured by the embedded gateway, which says `message_count`.
- `session.history {offset, limit}`: pages only on the embedded gateway (`history_window`);
  0.19 and 0.20.1 ignore both and send the whole history; 0.22 refuses them (4000).
- unknown params: refused by 0.22 (4000, "Extra inputs are not permitted"), ignored elsewhere.
- idempotent submit (`submission_ref`): the embedded gateway only.
- server->client requests (`client.capabilities {server_requests: true}`): 0.22 only.
- `session.steer`: 0.19, 0.20.1, 0.22; not the embedded gateway, which lists the methods it
  serves (`capabilities.methods`), so the composer hides Steer and Branch is greyed from the
  start. A gateway without that list is learned from (-32601 goes into `missing`).

One `Dialect` per socket generation: a reconnect starts from the new ready frame.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from desktop.common.codes import BAD_PARAMS, METHOD_NOT_FOUND
from desktop.core.errors import ProtocolError

# The newest `gateway.ready.payload.protocol.version` this client understands.
PROTOCOL_VERSION = 1

# "invalid params for prompt.submit: submission_ref: Extra inputs are not permitted — ..."
_EXTRA = re.compile(r"([A-Za-z_][\w.]*): Extra inputs are not permitted")


@dataclass(slots=True)
class Dialect:
    """What the gateway on the current socket does; the learned part grows as it answers."""

    heartbeat: bool = False
    protocol_version: int | None = None
    # Events carry `seq` and `session.events.since` replays those missed while detached.
    event_replay: bool = False
    replay_epoch: str | None = None
    client_turn_id: bool = False
    # `prompt.submit.submission_ref` de-duplicates: an ambiguous submit may be sent again.
    submission_ref: bool = False
    stream_ownership: bool = False
    # `session.history` reads only the asked page: a session may open with its last messages.
    history_window: bool = False
    file_attachments: bool = False
    # The gateway pushes `sessions.changed` when its session list changes.
    change_events: bool = False
    # Every method the gateway serves, where its ready frame lists them; None: not said.
    served: frozenset[str] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    # Learned on this connection.
    # What `client.capabilities {server_requests: true}` said the gateway will ask as requests.
    server_requests: frozenset[str] = frozenset()
    missing: set[str] = field(default_factory=set)  # methods answered -32601
    rejected: dict[str, set[str]] = field(default_factory=dict)  # method -> refused params

    @classmethod
    def from_ready(cls, payload: Mapping[str, Any]) -> Dialect:
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

        def said(name: str) -> bool:
            return payload.get(name) is True or caps.get(name) is True

        return cls(
            heartbeat=payload.get("heartbeat") is True,
            protocol_version=version,
            # A gateway that names a replay epoch numbers its events for replay within it
            # (0.22 does so without a `capabilities` object).
            event_replay=said("event_replay") or epoch is not None,
            replay_epoch=None if epoch is None else str(epoch),
            client_turn_id=said("client_turn_id"),
            submission_ref=said("submission_ref"),
            stream_ownership=said("stream_ownership"),
            history_window=said("history_window"),
            file_attachments=said("file_attachments"),
            change_events=said("change_events"),
            served=_names(caps.get("methods")),
            raw=dict(payload),
        )

    def has(self, method: str) -> bool:
        """False where the ready frame's method list leaves `method` out, or once the gateway
        answered it with -32601 on this connection."""
        listed = self.served is None or method in self.served
        return listed and method not in self.missing

    def accepts(self, method: str, param: str) -> bool:
        """False once the gateway refused `param` of `method` on this connection."""
        return param not in self.rejected.get(method, ())

    def fit(self, method: str, params: dict[str, Any] | None) -> dict[str, Any] | None:
        """`params` without those this gateway refused for `method`."""
        refused = self.rejected.get(method)
        if not refused or params is None:
            return params
        return {k: v for k, v in params.items() if k not in refused}

    def learn(self, method: str, params: Mapping[str, Any] | None, code: int, message: str) -> bool:
        """Remember what a refusal says; True when it named params that can be left out
        (the request was refused before it ran, so sending it again without them is safe)."""
        if code == METHOD_NOT_FOUND:
            self.missing.add(method)
            return False
        if code != BAD_PARAMS or not params:
            return False
        named = {m.group(1).split(".")[0] for m in _EXTRA.finditer(message)} & set(params)
        if not named:
            return False
        self.rejected.setdefault(method, set()).update(named)
        return True


def _names(raw: Any) -> frozenset[str] | None:
    if not isinstance(raw, list) or not all(isinstance(name, str) for name in raw):
        return None
    return frozenset(raw)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
