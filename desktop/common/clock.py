"""Time as an injectable dependency: the real asyncio clock and a manual one for tests."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """What the core needs of time: a monotonic now, wall time and one-shot timers."""

    def monotonic(self) -> float: ...

    def wall(self) -> float: ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle: ...

    async def sleep(self, delay: float) -> None: ...


class AsyncioClock:
    """The real clock; timers run on the running asyncio loop (qasync's under the UI)."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(0.0, delay), callback)

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(max(0.0, delay))


class _ManualTimer:
    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock that moves only when told to; `advance()` fires due timers in order.

    Sleepers are futures on the running loop, woken by `advance()`.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._wall_offset = 1_700_000_000.0
        self._timers: list[tuple[float, int, _ManualTimer]] = []
        self._seq = itertools.count()

    def monotonic(self) -> float:
        return self._now

    def wall(self) -> float:
        return self._wall_offset + self._now

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _ManualTimer(self._now + max(0.0, delay), callback)
        heapq.heappush(self._timers, (timer.when, next(self._seq), timer))
        return timer

    async def sleep(self, delay: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not fut.done():
                fut.set_result(None)

        handle = self.call_later(delay, wake)
        try:
            await fut
        finally:
            handle.cancel()

    @property
    def pending(self) -> int:
        """Timers scheduled and not cancelled."""
        return sum(1 for _, _, t in self._timers if not t.cancelled)

    def waits(self, delay: float) -> bool:
        """Whether a live timer falls due `delay` seconds from now (a sleeper just began)."""
        return any(
            not t.cancelled and abs(t.when - self._now - delay) < 1e-9 for *_, t in self._timers
        )

    def next_deadline(self) -> float | None:
        live = [t.when for _, _, t in self._timers if not t.cancelled]
        return min(live) if live else None

    def advance(self, seconds: float) -> None:
        """Move time forward, firing every timer that falls due, in deadline order."""
        target = self._now + seconds
        while self._timers and self._timers[0][0] <= target:
            when, _, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, when)
            timer.callback()
        self._now = target
