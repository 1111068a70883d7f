"""Drop a real link at every phase of the heartbeat and measure each detection (the sweep rows).

The moment of the drop is swept across four heartbeat periods after the socket came up (the
heartbeat against the deadline check: with 1:3 timers the check and a ping fall on the same
instant), and taken right after a reply, right before a pong (the ping goes into the
blackhole) and right after one. Each trial blackholes the proxy, waits for the client to declare
the socket dead, restores the network and reconnects at once.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from tests.reliability.clocks import TickClock
from tests.reliability.rig import PING_MARK, Rig, until

# The production 15 s / 45 s, scaled by 45.
INTERVAL = 1.0 / 3.0
DEADLINE = 1.0
POINTS = 10
WORST = 1.03
__all__ = ["DEADLINE", "INTERVAL", "PING_MARK", "Trial", "figure", "sweep"]
BEST = 0.97
DEADLINE_REASON = "heartbeat deadline passed"


@dataclass(frozen=True, slots=True)
class Trial:
    moment: str
    ratio: float


class _Drop:
    """Blackholes the link once; remembers when (relative to the socket's gateway.ready)."""

    def __init__(self, r: Rig) -> None:
        self._r = r
        self.after_ready: float | None = None

    def __call__(self) -> None:
        if self.after_ready is None:
            assert self._r.proxy is not None
            self._r.proxy.set_mode("blackhole")
            self.after_ready = time.monotonic() - self._r.ready_at


async def _detected(r: Rig, moment: str, before: int) -> Trial:
    """Wait for the heartbeat deadline to kill the link; its ratio; then reconnect at once."""
    deaths = r.deaths
    await until(
        lambda: any(d.reason == DEADLINE_REASON for d in deaths[before:]),
        f"drop {moment} detected",
        10,
    )
    death = next(d for d in deaths[before:] if d.reason == DEADLINE_REASON)
    ratio = (death.at - death.wire_inbound) / DEADLINE
    epoch = r.sup.epoch
    r.restore_network()
    r.sup.reconnect_now()
    await r.wait_online(10, after=epoch)
    return Trial(moment, ratio)


async def _trial(
    r: Rig,
    moment: str,
    *,
    offset: float | None = None,
    on: str | None = None,
    nth: int = 1,
    reply: bool = False,
) -> Trial:
    before = len(r.deaths)
    drop = _Drop(r)
    seen = 0

    def hook(kind: str) -> None:
        nonlocal seen
        if kind == on:
            seen += 1
            if seen == nth:
                drop()

    timer: asyncio.TimerHandle | None = None
    if reply:
        await r.sup.call("session.list", {})
        drop()
    elif on is not None:
        r.wire_hook = hook
    else:
        assert offset is not None
        delay = max(0.0, r.ready_at + offset - time.monotonic())
        timer = asyncio.get_running_loop().call_later(delay, drop)
    try:
        trial = await _detected(r, moment, before)
    finally:
        r.wire_hook = None
        if timer is not None:
            timer.cancel()
    return Trial(f"{moment} (+{drop.after_ready:.3f} s)", trial.ratio)


async def _after_reconnect(r: Rig, moment: str) -> Trial:
    """Reconnect, drop on the first frame after gateway.ready (the router's reattach reply)."""
    before = len(r.deaths)
    drop = _Drop(r)
    ready = False

    def hook(kind: str) -> None:
        nonlocal ready
        if kind == "ready":
            ready = True
        elif ready:
            drop()

    r.wire_hook = hook
    try:
        r.sup.reconnect_now()
        trial = await _detected(r, moment, before)
    finally:
        r.wire_hook = None
    return Trial(f"{moment} (+{drop.after_ready:.3f} s)", trial.ratio)


async def sweep(r: Rig, *, points: int = POINTS) -> list[Trial]:
    """All trials on one rig (already online); see the module docstring."""
    await r.create_session()  # routed: every reconnect reattaches it at once
    trials = [await _trial(r, "right after a reply", reply=True)]
    trials.append(await _after_reconnect(r, "right after the reattach reply"))
    for k in (1, 3):
        trials.append(await _trial(r, f"right before pong {k}", on="ping", nth=k))
        trials.append(await _trial(r, f"right after pong {k}", on="pong", nth=k))
    span = 4 * INTERVAL
    for i in range(points):
        offset = 0.1 + span * i / points
        trials.append(await _trial(r, f"at {offset:.3f} s", offset=offset))
    # Where frames of one instant share a timestamp (the fake clock, a 64 Hz timer tick), a
    # reply right after gateway.ready is as old as the deadline's base. Last: every socket
    # from here on gets the coarse clock.
    r.opt.client_clock = TickClock()
    trials.append(await _after_reconnect(r, "right after the reattach reply, 64 Hz clock tick"))
    return trials


def figure(trials: list[Trial]) -> tuple[str, bool]:
    """The row's measured text and verdict: the worst (and best) ratio over all trials."""
    worst = max(trials, key=lambda t: t.ratio)
    best = min(trials, key=lambda t: t.ratio)
    measured = (
        f"{len(trials)} drop moments; worst ratio {worst.ratio:.3f} ({worst.moment}), "
        f"best {best.ratio:.3f}"
    )
    return measured, worst.ratio <= WORST and best.ratio >= BEST
