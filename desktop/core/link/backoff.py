"""The reconnect policy, its one home: how long to wait, when the wait starts over, when to stop.

- `RECONNECT`: full-jitter exponential backoff between attempts (1 s floor, 30 s cap). Full
  jitter spreads a fleet of clients that lost the same gateway; the floor keeps a refused port
  from being hammered, and the cap bounds how long a returning network waits.
- `STABLE_AFTER`: only losing a connection that was online this long (a useful one) starts
  the schedule over, so a link that dies while it is being set up (on the same frame each
  time) keeps backing off.
- `CloseRepeats`: the same data-caused close (`REPEATING_CLOSE_CODES`) ending `REPEAT_LIMIT`
  connections in a row, none of them useful, stops reconnecting: a new socket would get the
  same frame and close the same way.

`ConnectionSupervisor` follows it: it counts failures along the schedule (`Retries`).
"""

from __future__ import annotations

from desktop.common.retry import RetrySchedule

RECONNECT = RetrySchedule(first=1.0, cap=30.0, jitter=True)
STABLE_AFTER = 10.0
# Close codes saying "this data": a new socket gets the same frame and closes the same way.
REPEATING_CLOSE_CODES = frozenset({1002, 1003, 1007, 1009})
REPEAT_LIMIT = 3


class CloseRepeats:
    """The close code of each not-useful connection in a row that ended the same data-caused way."""

    __slots__ = ("_codes",)

    def __init__(self) -> None:
        self._codes: list[int] = []

    def __len__(self) -> int:
        return len(self._codes)

    def clear(self) -> None:
        self._codes.clear()

    def repeating(self, code: int | None, useful: bool) -> bool:
        """Count a lost connection; True when the same data-caused close keeps ending
        connections before they are useful (reconnecting stops)."""
        if useful or code is None or code not in REPEATING_CLOSE_CODES:
            self._codes.clear()
            return False
        if self._codes and self._codes[-1] != code:
            self._codes.clear()
        self._codes.append(code)
        return len(self._codes) >= REPEAT_LIMIT
