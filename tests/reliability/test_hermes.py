"""Client-side fault-matrix rows against every real Hermes line (0.19.0, 0.20.1.2, 0.22.2).

One gateway per line, shared by the module's rows (a module-scoped fixture; each row has its
own client stack, store and fault proxy). The link dialect differs by line: 0.19 and 0.20.1
have no `gateway.ping`, so a silent drop is found by WebSocket pings; 0.22 says
`heartbeat: true` in gateway.ready and the client's `gateway.ping` heartbeat finds it. Rows are
recorded as `S@<line>` (tests/reliability/report.py). Exactly-once rows (20a, 20b) are in
test_hermes_delivery.py.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from desktop.core.models import ConnectionState
from tests.reliability import phases
from tests.reliability.clocks import ScaledClock
from tests.reliability.conftest import RecordFigure
from tests.reliability.history import Outcome
from tests.reliability.rig import Rig, rig, until
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.fault_proxy import FaultProxy, port_of
from tests.support.hermes_env import (
    HERMES_019,
    HERMES_0201,
    HERMES_022,
    HermesDist,
    shared_hermes_gateway,
)

pytestmark = [pytest.mark.hermes, pytest.mark.slow]

LINES = [pytest.param(d, id=d.line) for d in (HERMES_019, HERMES_0201, HERMES_022)]
LONG_ANSWER = " ".join(f"word{i:03d}" for i in range(80))
DRIP_ANSWER = " ".join(f"word{i:03d}" for i in range(40))
SHORT_ANSWER = "a short answer"


@dataclass(frozen=True)
class Line:
    """One real Hermes line's gateway and provider, shared by this module's rows."""

    dist: HermesDist
    fake: FakeOpenAIServer
    port: int
    token: str

    @property
    def tag(self) -> str:
        return self.dist.line

    @property
    def heartbeat(self) -> bool:
        """0.22's gateway.ready says heartbeat: true (the older lines have no gateway.ping)."""
        return self.dist is HERMES_022

    @property
    def detector(self) -> str:
        return "gateway.ping" if self.heartbeat else "WebSocket pings"


@pytest.fixture(scope="module", params=LINES)
def line(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Line]:
    dist: HermesDist = request.param
    home = tmp_path_factory.mktemp(f"hermes-{dist.line}")
    with (
        FakeOpenAIServer(SHORT_ANSWER, chunk_size=8) as fake,
        shared_hermes_gateway(home, fake.base_url, dist) as gw,
    ):
        port = port_of(gw.url)
        yield Line(dist, fake, port, gw.token)


@contextlib.asynccontextmanager
async def hermes_rig(
    tmp: Path,
    line: Line,
    *,
    reply: str = SHORT_ANSWER,
    chunk_delay: float = 0.0,
    online: bool = True,
    **options: Any,
) -> AsyncIterator[Rig]:
    """The client stack against the line's gateway behind a fault proxy of its own."""
    line.fake.set_reply(reply, chunk_delay=chunk_delay)
    line.fake.script = []
    proxy = FaultProxy(line.port).start()
    options.setdefault("token", line.token)
    try:
        url = f"ws://127.0.0.1:{proxy.port}/api/ws"
        async with rig(tmp, gateway=False, url=url, **options) as r:
            r.proxy = proxy
            if online:
                await r.wait_online(60)
            yield r
            r.proxy = None  # stopped below, after the client stack
    finally:
        proxy.stop()


async def served(r: Rig, key: str) -> Counter[str]:
    history = await r.sup.call("session.history", {"session_id": r.router.runtime_id(key)})
    rows = history.get("messages", []) if isinstance(history, dict) else []
    return Counter(m.get("text") or m.get("content") for m in rows if m.get("role") == "user")


async def test_hermes_01_17_silent_drop(
    tmp_path: Path, line: Line, record_figure: RecordFigure
) -> None:
    async with hermes_rig(tmp_path, line) as r:
        assert r.sup.dialect.heartbeat is line.heartbeat
        epoch = r.sup.epoch
        r.proxy.set_mode("blackhole")
        await until(lambda: len(r.deaths) == 1, "blackhole detected", 10)
        death = r.deaths[0]
        elapsed = death.at - (death.last_inbound or 0.0)
        app_pings = sum("gateway.ping" in s for s in r.sent)
        r.restore_network()
        await r.wait_online(30, after=epoch)
        record_figure(
            f"1+17@{line.tag}",
            f"drop detected <= deadline x 1.03 via {line.detector}"
            + ("" if line.heartbeat else " (no gateway.ping sent)"),
            f"{app_pings} gateway.ping, {elapsed:.3f} s (ratio {elapsed:.3f})",
            (app_pings > 0 if line.heartbeat else app_pings == 0) and 0.97 <= elapsed <= 1.03,
        )


def _ratio(r: Rig) -> tuple[float, str]:
    death = r.deaths[-1]
    assert death.last_inbound is not None
    elapsed = death.at - death.last_inbound
    return elapsed, f"{elapsed:.3f} s after last inbound (ratio {elapsed / phases.DEADLINE:.3f})"


async def test_hermes_01_phase_sweep(
    tmp_path: Path, line: Line, record_figure: RecordFigure
) -> None:
    async with hermes_rig(tmp_path, line, interval=phases.INTERVAL, deadline=phases.DEADLINE) as r:
        assert r.sup.dialect.heartbeat is line.heartbeat
        trials = await phases.sweep(r)
        app_pings = sum(phases.PING_MARK in s for s in r.sent)
        measured, ok = phases.figure(trials)
        record_figure(
            f"1-phase@{line.tag}",
            f"{line.detector}: every drop moment detected <= deadline x 1.03",
            f"{measured}; {app_pings} gateway.ping",
            ok and (app_pings > 0 if line.heartbeat else app_pings == 0),
        )


async def _mid_stream(r: Rig, text: str) -> str:
    key = await r.create_session()
    r.submit(key, text)
    conv = r.router.conversation(key)
    assert conv is not None
    await until(lambda: bool(conv.streaming_message and conv.streaming_message.text), "streaming")
    return key


async def test_hermes_02_blackhole_mid_stream(
    tmp_path: Path, line: Line, record_figure: RecordFigure
) -> None:
    async with hermes_rig(tmp_path, line, reply=LONG_ANSWER, chunk_delay=0.03) as r:
        streamed = line.fake.streams_done
        key = await _mid_stream(r, "hermes mid-stream blackhole")
        r.proxy.set_mode("blackhole")
        await until(lambda: len(r.deaths) == 1, "blackhole detected", 10)
        elapsed, measured = _ratio(r)
        # The turn ends while the link is down: the reply comes back from the history alone
        # (0.19's rows have no times: the one it started with here is kept).
        await until(lambda: line.fake.streams_done > streamed, "reply streamed whole", 60)
        r.restore_network()
        await r.wait_reply(key, LONG_ANSWER, 60)
        await r.settled(60)
        counts = await served(r, key)
        problems = r.problems(counts)
        replies = r.replies(key)
        untimed = r.untimed_replies(key)
        record_figure(
            f"2@{line.tag}",
            f"{line.detector}: detected <= deadline x 1.03; the turn ends meanwhile; reply "
            "rebuilt from the snapshot, complete, once, with its time",
            f"{measured}; {replies.count(LONG_ANSWER)} complete reply, {len(problems)} violations, "
            f"{untimed} replies without a time",
            0.97 <= elapsed <= 1.03 and replies == [LONG_ANSWER] and not problems and not untimed,
        )


async def test_hermes_03_rst_mid_stream(
    tmp_path: Path, line: Line, record_figure: RecordFigure
) -> None:
    async with hermes_rig(tmp_path, line, reply=LONG_ANSWER, chunk_delay=0.03) as r:
        key = await _mid_stream(r, "hermes mid-stream reset")
        cut = time.monotonic()
        r.proxy.reset_all()
        await until(lambda: len(r.deaths) == 1, "reset detected", 5)
        detected = r.deaths[0].at - cut
        await r.wait_reply(key, LONG_ANSWER, 60)
        await r.settled(60)
        counts = await served(r, key)
        problems = r.problems(counts)
        replies = r.replies(key)
        record_figure(
            f"3@{line.tag}",
            "RST detected <= 1 s; reply complete, once",
            f"{detected:.3f} s; {replies.count(LONG_ANSWER)} complete reply, "
            f"{len(problems)} violations",
            detected <= 1.0 and replies == [LONG_ANSWER] and not problems,
        )


async def test_hermes_05_half_open_writes_vanish(
    tmp_path: Path, line: Line, record_figure: RecordFigure
) -> None:
    async with hermes_rig(tmp_path, line) as r:
        key = await r.create_session()
        r.proxy.set_mode("blackhole", direction="up")  # our writes vanish; no FIN, no RST
        entry = r.submit(key, "into a dead hermes peer")
        await until(lambda: len(r.deaths) == 1, "half-open detected", 10)
        elapsed, measured = _ratio(r)
        dead_at = r.deaths[0].at
        await until(lambda: r.history.ops[entry.submission_ref].ambiguous, "ambiguous", 1)
        rejected_after = time.monotonic() - dead_at
        r.restore_network()  # what the blackhole held is lost: the prompt never arrived
        await r.settled(60)
        await r.wait_online(30)
        counts = await served(r, key)
        problems = r.problems(counts)
        op = r.history.ops[entry.submission_ref]
        record_figure(
            f"5@{line.tag}",
            f"{line.detector}: detected <= deadline x 1.03; pending call rejected <= 100 ms; "
            "the lost prompt is not re-sent but given back to the composer",
            f"{measured}; rejected within {rejected_after * 1000:.0f} ms; sent "
            f"{r.history.sends(op)}x, ran {counts[entry.text]}, outcome "
            f"{op.outcome.value if op.outcome else None}, {len(problems)} violations",
            0.97 <= elapsed <= 1.03
            and rejected_after <= 0.1
            and r.history.sends(op) == 1
            and op.outcome is Outcome.RESTORED
            and not problems,
        )


async def test_hermes_06_slow_drip(tmp_path: Path, line: Line, record_figure: RecordFigure) -> None:
    async with hermes_rig(tmp_path, line, reply=DRIP_ANSWER, chunk_delay=0.02) as r:
        key = await r.create_session()
        r.proxy.set_mode("bandwidth", rate=1024)
        started = time.monotonic()
        r.submit(key, "hermes drip")
        await r.wait_reply(key, DRIP_ANSWER, timeout=60)
        took = time.monotonic() - started
        r.proxy.set_mode("pass")
        assert took > 2 * phases.DEADLINE, "the drip must outlast the deadline to prove anything"
        record_figure(
            f"6@{line.tag}",
            "0 disconnects at 1 KB/s",
            f"{len(r.deaths)} disconnects over {took:.1f} s of drip",
            not r.deaths and r.reconnects() == 0,
        )


async def test_hermes_15_malformed_frames(
    tmp_path: Path, line: Line, record_figure: RecordFigure
) -> None:
    garbage = ["{", "[]", '{"jsonrpc":"1.0"}', '{"jsonrpc":"2.0","id":true,"result":1}', "\x00"]
    injected = 0

    def inject(frame: str | bytes) -> list[str | bytes]:
        nonlocal injected
        injected += 1
        return [garbage[injected % len(garbage)], frame]

    async with hermes_rig(tmp_path, line) as r:
        key = await r.create_session()
        r.inbound_filter = inject
        r.submit(key, "garbage around hermes")
        await r.wait_reply(key, SHORT_ANSWER, 60)
        bad = sum(c.stats.malformed_frames for c in r.clients)
        record_figure(
            f"15@{line.tag}",
            "0 disconnects from invalid frames; all counted",
            f"{len(r.deaths)} disconnects, {bad}/{injected} invalid frames counted",
            not r.deaths and bad == injected,
        )


async def test_hermes_18_auth_refused(
    tmp_path: Path, line: Line, record_figure: RecordFigure
) -> None:
    clock = ScaledClock(100.0)
    async with hermes_rig(tmp_path, line, online=False, token="wrong-token", sup_clock=clock) as r:
        await until(lambda: r.sup.status.state is ConnectionState.FAILED, "failed", 30)
        attempts = r.proxy.accepted
        record_figure(
            f"18@{line.tag}",
            "0 retries after auth refused (HTTP 403)",
            f"{attempts - 1} retries, {clock.pending} timers, reason {r.sup.status.reason!r}",
            attempts == 1 and clock.pending == 0 and "403" in r.sup.status.reason,
        )
