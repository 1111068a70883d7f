"""Per-session event sequencing and the bounded replay buffer behind `session.events.since`."""

from __future__ import annotations

from collections import deque
from typing import Any

DEFAULT_REPLAY_LIMIT = 2000


class EventLog:
    """Numbers a session's events 1, 2, 3... and keeps the last `limit` of them for replay."""

    def __init__(self, limit: int = DEFAULT_REPLAY_LIMIT) -> None:
        self._events: deque[dict[str, Any]] = deque(maxlen=max(1, limit))
        self._last_seq = 0

    @property
    def last_seq(self) -> int:
        return self._last_seq

    def append(self, session_id: str, type_: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Stamp the next seq on a new event and remember it; returns the event params as sent."""
        self._last_seq += 1
        params: dict[str, Any] = {
            "type": type_,
            "session_id": session_id,
            "payload": payload,
            "seq": self._last_seq,
        }
        self._events.append(params)
        return params

    def since(self, last_seen: int) -> tuple[list[dict[str, Any]], bool]:
        """Events with seq > last_seen, and whether the buffer still held all of them."""
        events = [e for e in self._events if e["seq"] > last_seen]
        oldest = self._events[0]["seq"] if self._events else self._last_seq + 1
        complete = last_seen >= oldest - 1 or last_seen >= self._last_seq
        return events, complete
