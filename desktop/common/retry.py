"""Retry schedules: capped exponential delays, optionally with full jitter, and their counter.

The one type behind every retry in the app: the supervisor's reconnects (jittered,
`core/link/backoff.py`), the outbox's re-sends, the draft keeper's saves and the provider
fallback's probes of its primary.
"""

from __future__ import annotations

import random as _random
from collections.abc import Callable
from dataclasses import dataclass

# 2**32 times any sane floor is past any sane cap: a long outage cannot overflow the float.
_MAX_DOUBLINGS = 32


@dataclass(frozen=True, slots=True)
class RetrySchedule:
    """Delay before retry `n` (0 for the first): `first * 2**n`, never more than `cap`.

    With `jitter` (full jitter, for a fleet of clients that lost the same server) the delay is
    instead uniform between `first` and twice that plain delay, still capped: the floor keeps
    a refused port from being hammered, the cap bounds how long a returning network waits.
    """

    first: float
    cap: float
    jitter: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.first <= self.cap:
            raise ValueError("a retry schedule needs 0 < first <= cap")

    def ceiling(self, n: int) -> float:
        """The longest delay retry `n` may wait."""
        doublings = max(0, n) + (1 if self.jitter else 0)
        return min(self.cap, self.first * 2.0 ** min(doublings, _MAX_DOUBLINGS))

    def delay(self, n: int, random: Callable[[], float] = _random.random) -> float:
        """How long to wait before retry `n`; `random` (in [0, 1]) places a jittered one."""
        ceiling = self.ceiling(n)
        if not self.jitter:
            return ceiling
        r = min(max(random(), 0.0), 1.0)
        return self.first + r * (ceiling - self.first)


class Retries:
    """Failures counted along a `RetrySchedule`: each `next_delay()` counts one, `reset()`
    starts again from the first delay (the owner decides what counts as a success)."""

    __slots__ = ("_attempt", "_random", "schedule")

    def __init__(
        self, schedule: RetrySchedule, *, random: Callable[[], float] = _random.random
    ) -> None:
        self.schedule = schedule
        self._random = random
        self._attempt = 0

    @property
    def attempt(self) -> int:
        """Failures since the last reset."""
        return self._attempt

    def ceiling(self) -> float:
        """The longest delay the next call to `next_delay()` may return."""
        return self.schedule.ceiling(self._attempt)

    def next_delay(self) -> float:
        """Count one more failure and return how long to wait before trying again."""
        delay = self.schedule.delay(self._attempt, self._random)
        self._attempt += 1
        return delay

    def reset(self) -> None:
        """It worked: the next failure waits the first delay again."""
        self._attempt = 0
