"""Scenario 1 with a blackhole the kernel really produces (veth down), not the proxy's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.conftest import RecordFigure
from tests.reliability.rig import TOKEN, rig, until
from tests.support.netns import GatewayNetns

pytestmark = [pytest.mark.netns, pytest.mark.slow]


async def test_01_kernel_blackhole_while_idle(tmp_path: Path, record_figure: RecordFigure) -> None:
    with GatewayNetns(tmp_path, TOKEN) as ns:
        async with rig(tmp_path, gateway=False, url=ns.url, allow_insecure=True) as r:
            await r.wait_online()
            epoch = r.sup.epoch
            ns.blackhole()
            await until(lambda: len(r.deaths) == 1, "kernel blackhole detected", 5)
            death = r.deaths[0]
            assert death.last_inbound is not None
            elapsed = death.at - death.last_inbound
            ns.restore()
            await r.wait_online(10, after=epoch)
            record_figure(
                "1-netns",
                "veth down: detected <= deadline x 1.03; back online after up",
                f"{elapsed:.3f} s after last inbound (ratio {elapsed:.3f})",
                0.97 <= elapsed <= 1.03,
            )
