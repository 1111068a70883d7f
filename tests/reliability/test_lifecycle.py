"""Fault matrix 7-11: latency spike, flapping, a 10-minute outage, intentional close and races.

Time scaling (documented in docs/reliability.md): the supervisor runs on a ScaledClock, so its
backoff slots (1-30 s) pass `scale` times faster; the client's heartbeat is 0.3 s / 1.0 s, i.e.
the production 15 s / 45 s divided by 45. A "50 s spike" is 50/45 s of real latency here, a
"10 min outage" is 600 virtual seconds of refused connections at scale 200 (3 s real).
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from desktop.core.models import ConnectionState
from tests.reliability.clocks import ScaledClock
from tests.reliability.conftest import RecordFigure
from tests.reliability.rig import rig, until

pytestmark = pytest.mark.slow
HEARTBEAT_SCALE = 45.0  # production deadline 45 s / test deadline 1 s


async def test_07_latency_spike_at_most_one_reconnect(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    clock = ScaledClock(HEARTBEAT_SCALE)
    async with rig(tmp_path, sup_clock=clock, connect_timeout=15 / HEARTBEAT_SCALE) as r:
        await r.wait_online()
        key = await r.create_session()
        spike = 50 / HEARTBEAT_SCALE
        r.proxy.set_mode("latency", ms=spike * 1000)
        r.submit(key, "during the spike")
        began = time.monotonic()
        await until(lambda: time.monotonic() - began >= spike, "the spike to pass", spike + 2)
        r.proxy.set_mode("pass")
        await r.settled(30)
        await r.wait_online()
        reconnects = r.reconnects()
        assert r.problems() == []
        record_figure(
            "7", "<= 1 reconnect for a 50 s spike", f"{reconnects} reconnect(s)", reconnects <= 1
        )


async def test_08_flapping_epochs_grow_one_socket(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    """Flapping every 2-5 s, scaled x10 (0.2-0.5 s), for 5 s while sending prompts."""
    rnd = random.Random(8)
    async with rig(tmp_path, sup_clock=ScaledClock(10.0)) as r:
        await r.wait_online()
        key = await r.create_session()
        began = time.monotonic()
        n = 0
        while time.monotonic() - began < 5.0:
            mode = rnd.choice(["blackhole", "reset", "pass", "pass"])
            if mode == "pass":
                r.restore_network()
            else:
                r.proxy.set_mode(mode)  # type: ignore[arg-type]
            r.submit(key, f"flap prompt {n}")
            n += 1
            step = time.monotonic()
            await until(lambda s=step: time.monotonic() - s >= rnd.uniform(0.2, 0.5), "flap", 2)
        r.restore_network()
        await r.settled(40)
        problems = r.problems()
        peak = r.history.sockets.max_live["p1"]
        epochs = r.history.epochs
        record_figure(
            "8",
            "epochs strictly increase; <= 1 live socket; 0 duplicates, 0 lost",
            f"{len(epochs)} epochs, peak {peak} socket(s), {len(problems)} violations, "
            f"{n} prompts: {dict(r.history.counts())}" + (f"; {problems}" if problems else ""),
            not problems and peak <= 1,
        )


async def test_09_network_back_after_10_minutes(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    clock = ScaledClock(200.0)
    rnd = random.Random(9)
    async with rig(tmp_path, sup_clock=clock, random=rnd.random) as r:
        await r.wait_online()
        key = await r.create_session()
        r.proxy.set_mode("reset")  # the network is gone: every attempt is refused
        down = clock.monotonic()
        entry = r.submit(key, "written during the outage")
        await until(lambda: clock.monotonic() - down >= 600, "10 virtual minutes", 10)
        attempts = sum(s.state is ConnectionState.CONNECTING for s in r.statuses) - 1
        r.proxy.set_mode("pass")
        back = clock.monotonic()
        await r.wait_online(10, after=1)
        waited = clock.monotonic() - back
        await r.settled()
        assert r.problems() == []
        assert r.history.ops[entry.submission_ref].outcome.value == "confirmed"
        record_figure(
            "9",
            "online <= next backoff slot (cap 30 s) after the network returns",
            f"{waited:.1f} virtual s; {attempts} attempts in 10 min",
            waited <= 31.0 and attempts <= 600,
        )


async def test_10_user_close_zero_reconnects(tmp_path: Path, record_figure: RecordFigure) -> None:
    clock = ScaledClock(200.0)
    async with rig(tmp_path, sup_clock=clock) as r:
        await r.wait_online()
        accepted = r.proxy.accepted
        await r.sup.close()
        await until(lambda: r.proxy.connections == 0, "no sockets left", 5)
        record_figure(
            "10",
            "0 reconnects, 0 timers, 0 sockets after close",
            f"{r.proxy.accepted - accepted} reconnects, {clock.pending} timers, "
            f"{r.history.sockets.live['p1']} sockets",
            r.proxy.accepted == accepted
            and clock.pending == 0
            and r.history.sockets.live["p1"] == 0
            and r.sup.status.state is ConnectionState.CLOSED,
        )


async def test_11_close_racing_backoff_and_handshake(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    clock = ScaledClock(1.0)
    async with rig(tmp_path, sup_clock=clock) as r:
        r.proxy.set_mode("reset")
        await until(lambda: r.sup.status.state is ConnectionState.RECONNECTING, "backoff", 5)
        accepted = r.proxy.accepted
        t0 = time.monotonic()
        await r.sup.close()
        backoff_close = time.monotonic() - t0
        backoff_ok = clock.pending == 0 and r.proxy.accepted == accepted
    async with rig(tmp_path / "b", sup_clock=clock) as r2:
        r2.proxy.set_mode("blackhole")  # the upgrade hangs: close while CONNECTING
        await until(lambda: r2.proxy.connections == 1, "handshake in flight", 5)
        assert r2.sup.status.state is ConnectionState.CONNECTING
        t0 = time.monotonic()
        await r2.sup.close()
        handshake_close = time.monotonic() - t0
        r2.proxy.set_mode("pass")
        await until(lambda: r2.proxy.connections == 0, "no sockets left", 5)
        handshake_ok = clock.pending == 0 and r2.proxy.accepted == 1
        live = r2.history.sockets.live["p1"]
    record_figure(
        "11",
        "close during backoff / handshake: 0 attempts after, 0 timers, returns <= 1 s",
        f"backoff close {backoff_close * 1000:.0f} ms, handshake close "
        f"{handshake_close * 1000:.0f} ms, {live} sockets",
        backoff_ok and handshake_ok and live == 0 and max(backoff_close, handshake_close) <= 1,
    )
