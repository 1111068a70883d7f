"""Liveness (core/link/liveness.py): silent-drop detection at every phase of the heartbeat, on
the fake clock, production timers, and the rule itself.

Each case connects a fresh client (heartbeat 15 s, deadline 45 s, pongs 0.2 s after a ping),
lets the session live until the moment of the drop, blackholes it and measures
(time the client declared it dead - last inbound frame) / deadline. The moment of the drop is
swept across four heartbeat periods (all phases of the heartbeat against the deadline check)
in 0.25 s steps, right after a reply at each of them, and right before and right after pongs.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest

from desktop.common.clock import ManualClock
from desktop.core.link.client import ClientState, JsonRpcGatewayClient
from desktop.core.link.liveness import Verdict, deadline_base, verdict
from tests.core.fakes import CURRENT_READY, LEGACY_READY, FakeGateway, settle

INTERVAL = 15.0
DEADLINE = 45.0
RTT = 0.2
STEP = 0.25
WORST_RATIO = 1.03
# Pongs are due at 15 k + RTT after connect; "before" is while the ping is still in flight.
PONG_MOMENTS = [(f"before pong {k}", INTERVAL * k + RTT - 0.01) for k in range(1, 5)] + [
    (f"after pong {k}", INTERVAL * k + RTT) for k in range(1, 5)
]
DIALECTS = {"app heartbeat": CURRENT_READY, "legacy (WebSocket pings)": LEGACY_READY}


@dataclass(frozen=True, slots=True)
class Case:
    moment: str
    offset: float
    ratio: float


async def run_until(clock: ManualClock, target: float) -> None:
    """Move the clock to `target`, one due timer at a time, letting the loop run after each."""
    while True:
        due = clock.next_deadline()
        if due is None or due > target:
            clock.advance(max(0.0, target - clock.monotonic()))
            await settle()
            return
        clock.advance(max(0.0, due - clock.monotonic()))
        await settle()


async def drop_case(ready: dict[str, Any], moment: str, offset: float, *, reply: bool) -> Case:
    """Connect, create a session, drop the link `offset` s after connect; the detection ratio."""
    clock = ManualClock()
    gw = FakeGateway(ready=ready, pong_clock=clock, pong_delay=RTT)
    gw.handlers["session.create"] = lambda params: {"session_id": "r1"}
    gw.handlers["session.list"] = lambda params: {"sessions": []}
    client = JsonRpcGatewayClient(
        "ws://127.0.0.1:9/api/ws",
        clock=clock,
        transport_factory=gw.factory,
        heartbeat_interval=INTERVAL,
        heartbeat_deadline=DEADLINE,
    )
    try:
        await client.connect()
        started = clock.monotonic()
        await client.call("session.create", {})
        await run_until(clock, started + offset)
        if reply:
            await client.call("session.list", {})
        last = client.last_inbound_at
        assert last is not None
        gw.peer.blackhole()
        give_up = clock.monotonic() + 4 * DEADLINE
        while client.state is ClientState.OPEN and clock.monotonic() < give_up:
            due = clock.next_deadline()
            assert due is not None, "no timer left: the drop would never be noticed"
            await run_until(clock, due)
        assert client.state is not ClientState.OPEN, f"{moment}: never detected"
        return Case(moment, offset, (clock.monotonic() - last) / DEADLINE)
    finally:
        await client.close()


async def sweep(ready: dict[str, Any]) -> list[Case]:
    cases: list[Case] = []
    grid = [STEP * i for i in range(int(4 * INTERVAL / STEP))]
    for offset, reply in itertools.product(grid, (False, True)):
        name = f"{'right after a reply ' if reply else ''}at +{offset:g} s"
        cases.append(await drop_case(ready, name, offset, reply=reply))
    for name, offset in PONG_MOMENTS:
        cases.append(await drop_case(ready, f"{name} (+{offset:g} s)", offset, reply=False))
    return cases


@pytest.mark.parametrize("dialect", list(DIALECTS))
async def test_silent_drop_is_caught_within_the_deadline_at_every_phase(dialect: str) -> None:
    cases = await sweep(DIALECTS[dialect])
    worst = max(cases, key=lambda c: c.ratio)
    late = [f"{c.moment}: {c.ratio:.3f}" for c in cases if c.ratio > WORST_RATIO]
    assert worst.ratio <= WORST_RATIO, (
        f"{dialect}: worst ratio {worst.ratio:.3f} ({worst.moment}); "
        f"{len(late)}/{len(cases)} late: {late[:8]}"
    )
    # The drop was detected by the deadline, not earlier by something else.
    assert min(c.ratio for c in cases) >= 1.0


def test_silence_for_a_whole_deadline_is_death_but_a_frame_still_arriving_is_not() -> None:
    base = deadline_base(last_inbound_at=100.0, progress_at=None)
    assert verdict(now=144.0, base=base, deadline=45.0, received=10, seen=10) is Verdict.ALIVE
    assert verdict(now=145.0, base=base, deadline=45.0, received=10, seen=10) is Verdict.DEAD
    assert verdict(now=145.0, base=base, deadline=45.0, received=11, seen=10) is Verdict.PROGRESS


def test_the_deadline_runs_from_the_later_of_the_last_frame_and_the_last_progress() -> None:
    assert deadline_base(last_inbound_at=100.0, progress_at=130.0) == 130.0
    assert deadline_base(last_inbound_at=100.0, progress_at=90.0) == 100.0
    assert deadline_base(last_inbound_at=None, progress_at=None) == 0.0
