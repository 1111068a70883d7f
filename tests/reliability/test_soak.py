"""Soak: the network flaps under continuous sending; fds and memory stay flat, nothing doubles."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from tests.reliability.clocks import ScaledClock
from tests.reliability.conftest import RecordFigure
from tests.reliability.rig import rig, until

pytestmark = pytest.mark.slow
SOAK_SECONDS = float(os.environ.get("HQT_SOAK_SECONDS", "40"))
PAGE = os.sysconf("SC_PAGE_SIZE")


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


async def test_soak_flapping_under_load(tmp_path: Path, record_figure: RecordFigure) -> None:
    rnd = random.Random(1234)
    async with rig(tmp_path, sup_clock=ScaledClock(10.0), words=4) as r:
        await r.wait_online()
        key = await r.create_session()
        began = time.monotonic()
        samples: list[tuple[int, float]] = []
        n = 0
        while time.monotonic() - began < SOAK_SECONDS:
            mode = rnd.choice(["blackhole", "reset", "latency", "pass", "pass", "pass"])
            if mode == "pass":
                r.restore_network()
            elif mode == "latency":
                r.proxy.set_mode("latency", ms=rnd.uniform(50, 400))
            else:
                r.proxy.set_mode(mode)  # type: ignore[arg-type]
            slot = time.monotonic()
            span = rnd.uniform(0.2, 0.6)
            while time.monotonic() - slot < span:
                r.submit(key, f"soak {n}")
                n += 1
                tick = time.monotonic()
                await until(lambda t=tick: time.monotonic() - t >= 0.1, "send pace", 2)
            if time.monotonic() - began > SOAK_SECONDS / 4:  # after warm-up
                samples.append((fds(), rss_mb()))
        r.restore_network()
        await r.settled(60)
        problems = r.problems()
        fd_growth = max(s[0] for s in samples) - samples[0][0]
        rss_growth = samples[-1][1] - samples[0][1]
        record_figure(
            "P4/soak",
            "fds +<= 10, RSS +<= 40 MB after warm-up; epochs grow; 0 duplicates or losses",
            f"{n} prompts over {SOAK_SECONDS:g} s, {len(r.history.epochs)} epochs, fd "
            f"+{fd_growth}, RSS {rss_growth:+.1f} MB, {len(problems)} violations "
            f"{dict(r.history.counts())}",
            not problems and fd_growth <= 10 and rss_growth <= 40,
        )
