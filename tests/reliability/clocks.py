"""Scaled time for scenarios whose real duration (10 min outages, 50 s spikes) CI cannot afford;
a coarse clock for phase trials.

A ScaledClock runs `scale` virtual seconds per real second on the running asyncio loop: the
supervisor's backoff (1-30 s) and anything else given this clock behave exactly as they would
in real time, only faster. Every timer it hands out is tracked, so a test can assert that
nothing is left scheduled (e.g. no reconnect pending after an intentional close).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

from desktop.common.clock import AsyncioClock


class _Handle:
    __slots__ = ("_clock", "_handle")

    def __init__(self, clock: ScaledClock, handle: asyncio.TimerHandle) -> None:
        self._clock = clock
        self._handle = handle

    def cancel(self) -> None:
        self._handle.cancel()
        self._clock._live.discard(self)


class ScaledClock:
    """Clock protocol of desktop.common.clock, `scale` times faster than the wall."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale
        self._origin = time.monotonic()
        self._live: set[_Handle] = set()
        self.scheduled = 0  # timers ever handed out

    def monotonic(self) -> float:
        return self._origin + (time.monotonic() - self._origin) * self.scale

    def wall(self) -> float:
        return time.time()

    def call_later(self, delay: float, callback: Callable[[], None]) -> _Handle:
        self.scheduled += 1
        holder: list[_Handle] = []

        def fire() -> None:
            self._live.discard(holder[0])
            callback()

        loop = asyncio.get_running_loop()
        handle = _Handle(self, loop.call_later(max(0.0, delay) / self.scale, fire))
        holder.append(handle)
        self._live.add(handle)
        return handle

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(max(0.0, delay) / self.scale)

    @property
    def pending(self) -> int:
        """Timers scheduled and neither fired nor cancelled."""
        return len(self._live)


class TickClock(AsyncioClock):
    """Real time read through a coarse tick (Windows' default timer runs at 64 Hz).

    The default tick (1/64 s) divides the rig's 1 s deadline, so a deadline ends on a tick.

    Frames that arrive within one tick share a timestamp, as they do on such systems; on the
    fake clock every frame of one instant does. Timers run on the loop as usual.
    """

    def __init__(self, tick: float = 1 / 64) -> None:
        self.tick = tick

    def monotonic(self) -> float:
        return math.floor(time.monotonic() / self.tick) * self.tick
