"""Per-session event sequencing and the bounded replay buffer behind `session.events.since`."""

from __future__ import annotations

from collections import deque
from typing import Any

from desktop.common.codec import dumps
from desktop.common.limits import MAX_FRAME_BYTES
from desktop.gateway.wire.frames import fits, truncate_strings

DEFAULT_REPLAY_LIMIT = 2000


class LoggedEvent(dict[str, Any]):
    """An event's params as sent, carrying its whole `event` frame, encoded once.

    Every recipient and the replay buffer share this one object, so an event costs one
    encoding however many times it is sent. Treat it as read-only once logged.
    """

    __slots__ = ("frame",)

    frame: str


class EventLog:
    """Numbers a session's events 1, 2, 3... and keeps the last `limit` of them for replay."""

    def __init__(
        self, limit: int = DEFAULT_REPLAY_LIMIT, *, max_frame: int = MAX_FRAME_BYTES
    ) -> None:
        self._max_frame = max_frame
        self._events: deque[LoggedEvent] = deque(maxlen=max(1, limit))
        self._last_seq = 0
        # The frame text up to the payload, per (session, type): only the payload and the
        # seq are encoded per event.
        self._prefixes: dict[tuple[str, str], str] = {}

    @property
    def last_seq(self) -> int:
        return self._last_seq

    def append(self, session_id: str, type_: str, payload: dict[str, Any]) -> LoggedEvent:
        """Stamp the next seq on a new event and remember it; returns the event params as sent."""
        body = dumps(payload)  # first: a payload JSON cannot hold must not use up a seq
        if not fits(body, self._max_frame - 256):
            # Sent whole, it would close the client's socket, and replay would send it again.
            payload = truncate_strings(payload, self._max_frame - 256)
            body = dumps(payload)
        prefix = self._prefixes.get((session_id, type_))
        if prefix is None:
            prefix = self._prefix(session_id, type_)
        seq = self._last_seq = self._last_seq + 1
        event = LoggedEvent(type=type_, session_id=session_id, payload=payload, seq=seq)
        event.frame = f'{prefix}{body},"seq":{seq}}}}}'
        self._events.append(event)
        return event

    def _prefix(self, session_id: str, type_: str) -> str:
        params = dumps({"type": type_, "session_id": session_id})[:-1]
        prefix = f'{{"jsonrpc":"2.0","method":"event","params":{params},"payload":'
        if len(self._prefixes) < 256:  # one log serves one session: a handful of event types
            self._prefixes[session_id, type_] = prefix
        return prefix

    def since(self, last_seen: int) -> tuple[list[dict[str, Any]], bool]:
        """Events with seq > last_seen, and whether the buffer still held all of them."""
        events: list[dict[str, Any]] = [e for e in self._events if e["seq"] > last_seen]
        oldest = self._events[0]["seq"] if self._events else self._last_seq + 1
        complete = last_seen >= oldest - 1 or last_seen >= self._last_seq
        return events, complete
