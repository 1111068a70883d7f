"""Scenario 1 at every phase: a silent drop is caught within the deadline wherever it falls."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.core.link import test_liveness as fake_sweep
from tests.reliability import phases
from tests.reliability.conftest import RecordFigure
from tests.reliability.filters import legacy_ready
from tests.reliability.rig import rig

pytestmark = pytest.mark.slow
EXPECTED = "every drop moment detected <= deadline x 1.03"


async def test_01_phase_sweep_fake_clock(record_figure: RecordFigure) -> None:
    """Production timers (15 s / 45 s) on the fake clock, both dialects, 0.25 s steps."""
    parts: list[str] = []
    ok = True
    for dialect, ready in fake_sweep.DIALECTS.items():
        cases = await fake_sweep.sweep(ready)
        worst = max(cases, key=lambda c: c.ratio)
        parts.append(f"{dialect}: {len(cases)} moments, worst {worst.ratio:.3f} ({worst.moment})")
        ok = ok and worst.ratio <= fake_sweep.WORST_RATIO
    record_figure("1-phase-fake", f"15 s / 45 s, fake clock: {EXPECTED}", "; ".join(parts), ok)


async def test_01_phase_sweep_app_heartbeat(tmp_path: Path, record_figure: RecordFigure) -> None:
    async with rig(tmp_path, interval=phases.INTERVAL, deadline=phases.DEADLINE) as r:
        await r.wait_online()
        trials = await phases.sweep(r)
        assert not r.protocol_pings, "the app heartbeat must carry liveness here"
        measured, ok = phases.figure(trials)
        record_figure("1-phase", f"app heartbeat (gateway.ping): {EXPECTED}", measured, ok)


async def test_01_phase_sweep_websocket_pings(tmp_path: Path, record_figure: RecordFigure) -> None:
    """The embedded gateway made to look legacy (no heartbeat in gateway.ready)."""
    async with rig(tmp_path, interval=phases.INTERVAL, deadline=phases.DEADLINE) as r:
        r.inbound_filter = legacy_ready
        await r.wait_online()
        trials = await phases.sweep(r)
        app_pings = sum(phases.PING_MARK in s for s in r.sent)
        measured, ok = phases.figure(trials)
        record_figure(
            "1-phase-legacy",
            f"legacy dialect (WebSocket pings): {EXPECTED}",
            f"{measured}; {app_pings} gateway.ping",
            ok and app_pings == 0,
        )
