"""Client-side scenarios against a real hermes-agent 0.19.0 gateway (legacy dialect)."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.reliability.conftest import RecordFigure
from tests.reliability.history import Outcome
from tests.reliability.rig import Rig, rig, until
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.fault_proxy import FaultProxy
from tests.support.hermes_env import hermes_gateway, require_hermes

pytestmark = [pytest.mark.hermes, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _hermes_available() -> None:
    require_hermes()


@contextlib.asynccontextmanager
async def hermes_rig(tmp: Path) -> AsyncIterator[Rig]:
    with FakeOpenAIServer("a short legacy answer", chunk_size=8) as fake:
        async with hermes_gateway(tmp / "home", fake.base_url) as gw:
            port = int(gw.url.rsplit(":", 1)[1].split("/")[0])
            proxy = FaultProxy(port).start()
            try:
                url = f"ws://127.0.0.1:{proxy.port}/api/ws"
                async with rig(tmp, gateway=False, url=url, token=gw.token) as r:
                    r.proxy = proxy
                    await r.wait_online(60)
                    yield r
                    r.proxy = None  # stopped below, after the client stack
            finally:
                proxy.stop()


async def served(r: Rig, key: str) -> Counter[str]:
    history = await r.sup.call("session.history", {"session_id": r.router.runtime_id(key)})
    rows = history.get("messages", []) if isinstance(history, dict) else []
    return Counter(m.get("text") or m.get("content") for m in rows if m.get("role") == "user")


async def test_hermes_01_17_silent_drop_without_heartbeat(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    async with hermes_rig(tmp_path) as r:
        assert r.sup.capabilities.heartbeat is False
        epoch = r.sup.epoch
        r.proxy.set_mode("blackhole")
        await until(lambda: len(r.deaths) == 1, "blackhole detected", 10)
        death = r.deaths[0]
        elapsed = death.at - (death.last_inbound or 0.0)
        app_pings = sum("gateway.ping" in s for s in r.sent)
        r.restore_network()
        await r.wait_online(30, after=epoch)
        record_figure(
            "1+17-hermes",
            "0.19: no gateway.ping; drop detected <= deadline x 1.03 via WebSocket pings",
            f"{app_pings} gateway.ping, {elapsed:.3f} s (ratio {elapsed:.3f})",
            app_pings == 0 and 0.97 <= elapsed <= 1.03,
        )


async def test_hermes_20_cut_after_submit_is_reconciled_not_resent(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    async with hermes_rig(tmp_path) as r:
        key = await r.create_session()
        r.proxy.set_mode("blackhole", direction="down")  # it runs; the reply is lost
        entry = r.submit(key, "legacy cut submit")
        await until(lambda: r.history.ops[entry.submission_ref].ambiguous, "ambiguous", 10)
        r.restore_network()
        await r.settled(60)
        await r.wait_online(30)
        await until(lambda: bool(r.replies(key)), "the turn finished", 30)
        counts = await served(r, key)
        problems = r.problems(counts)
        op = r.history.ops[entry.submission_ref]
        submits = sum('"prompt.submit"' in s for s in r.sent)
        record_figure(
            "20a-hermes",
            "legacy (no dedup): never re-sent; reconciled from the session; ran once",
            f"{submits} prompt.submit sent, ran {counts[entry.text]}, outcome "
            f"{op.outcome.value if op.outcome else None}",
            submits == 1
            and counts[entry.text] == 1
            and op.outcome is Outcome.CONFIRMED
            and not problems,
        )
