"""Fault matrix 12-15 and 17: stale generations, duplicates, gaps, garbage, no heartbeat."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from desktop.core.gateway import JsonRpcGatewayClient
from desktop.core.protocol import encode_event, encode_reply
from tests.core.fakes import FakeGateway
from tests.reliability.conftest import RecordFigure
from tests.reliability.filters import frame_kind, legacy_ready
from tests.reliability.providers import expected_reply
from tests.reliability.rig import rig, until

pytestmark = pytest.mark.slow


async def test_12_late_frames_from_old_generation(record_figure: RecordFigure) -> None:
    """A socket whose frames keep coming after we replaced it: none reach the new generation."""
    fake = FakeGateway()
    client = JsonRpcGatewayClient("ws://127.0.0.1:1/api/ws", transport_factory=fake.factory)
    seen: list[tuple[str, int]] = []
    client.subscribe(lambda event, gen: seen.append((event.type, gen)))
    try:
        await client.connect()
        old = fake.peer
        pending = asyncio.ensure_future(client.call("session.list"))
        await until(lambda: bool(old.requests("session.list")), "request written")
        old_id = old.requests("session.list")[0]["id"]
        await client.connect()  # generation 2 replaces 1; the old call is rejected
        new = fake.peer
        old.transport._closed = None  # the old socket misbehaves: frames still arrive
        old.transport._deliver(encode_reply(old_id, {"sessions": ["stale"]}))
        old.transport._deliver(encode_event("message.delta", {"text": "stale"}, session_id="s"))
        second = asyncio.ensure_future(client.call("session.list"))
        await until(lambda: bool(new.requests("session.list")), "second request written")
        new.reply(new.requests("session.list")[0]["id"], {"sessions": []})
        result = await second
        with pytest.raises(Exception, match="replaced"):
            await pending
        late = [s for s in seen if s[1] == 1 and s[0] != "gateway.ready"]
        record_figure(
            "12",
            "0 frames of an old generation applied",
            f"{len(late)} applied; new call got {result}",
            not late and result == {"sessions": []},
        )
    finally:
        await client.close()


async def test_13_duplicate_events_and_replies(tmp_path: Path, record_figure: RecordFigure) -> None:
    async with rig(tmp_path, words=30) as r:
        r.inbound_filter = lambda frame: [frame, frame]  # every frame twice
        await r.wait_online()
        key = await r.create_session()
        r.submit(key, "twice")
        expected = expected_reply("twice", 30)
        await r.wait_reply(key, expected)
        await r.settled()
        dup_replies = sum(c.stats.duplicate_replies for c in r.clients)
        replies = r.replies(key)
        assert r.problems() == []
        record_figure(
            "13",
            "duplicates applied 0: reply text exact, calls answered once",
            f"{len(replies)} reply, exact={replies == [expected]}, "
            f"{dup_replies} duplicate replies ignored",
            replies == [expected] and dup_replies > 0 and not r.deaths,
        )


async def test_14_gapped_and_reordered_seq(tmp_path: Path, record_figure: RecordFigure) -> None:
    state = {"deltas": 0, "held": None}

    def gap_and_swap(frame: str | bytes) -> list[str | bytes]:
        kind, _ = frame_kind(frame)
        if kind != "message.delta":
            return [frame]
        state["deltas"] += 1
        if state["deltas"] == 2:
            return []  # lost: a gap in seq
        if state["deltas"] == 5:
            state["held"] = frame  # delivered after the next one: out of order
            return []
        if state["deltas"] == 6 and state["held"] is not None:
            return [frame, state["held"]]
        return [frame]

    async with rig(tmp_path, words=40, word_interval=0.01) as r:
        await r.wait_online()
        key = await r.create_session()
        r.inbound_filter = gap_and_swap
        r.submit(key, "gaps")
        expected = expected_reply("gaps", 40)
        await r.wait_reply(key, expected)
        replies = r.replies(key)
        assert state["deltas"] >= 6, "the turn must stream enough deltas to gap and swap"
        record_figure(
            "14",
            "reply exact after a gap and a swap (replayed by seq)",
            f"exact={replies == [expected]} after {state['deltas']} deltas",
            replies == [expected],
        )


async def test_15_malformed_frames_ignored(tmp_path: Path, record_figure: RecordFigure) -> None:
    garbage = ["{", "[]", '{"jsonrpc":"1.0"}', '{"jsonrpc":"2.0","id":true,"result":1}', "\x00"]
    injected = 0

    def inject(frame: str | bytes) -> list[str | bytes]:
        nonlocal injected
        injected += 1
        return [garbage[injected % len(garbage)], frame]

    async with rig(tmp_path, words=20) as r:
        await r.wait_online()
        key = await r.create_session()
        r.inbound_filter = inject
        r.submit(key, "garbage around")
        await r.wait_reply(key, expected_reply("garbage around", 20))
        await r.settled()
        bad = sum(c.stats.malformed_frames for c in r.clients)
        assert r.problems() == []
        record_figure(
            "15",
            "0 disconnects from invalid frames; all counted",
            f"{len(r.deaths)} disconnects, {bad}/{injected} invalid frames counted",
            not r.deaths and bad == injected,
        )


async def test_17_backend_without_heartbeat(tmp_path: Path, record_figure: RecordFigure) -> None:
    """The ready payload loses `heartbeat` (legacy dialect): protocol pings must find the drop."""

    async with rig(tmp_path) as r:
        r.inbound_filter = legacy_ready
        await r.wait_online()
        assert r.sup.capabilities.heartbeat is False
        await until(lambda: r.protocol_pings >= 2, "protocol pings", 5)
        r.proxy.set_mode("blackhole")
        await until(lambda: len(r.deaths) == 1, "drop detected", 5)
        death = r.deaths[0]
        elapsed = death.at - death.last_inbound
        app_pings = sum("gateway.ping" in s for s in r.sent)
        r.restore_network()
        record_figure(
            "17",
            "no gateway.ping sent; drop detected <= deadline x 1.03 via WebSocket pings",
            f"{app_pings} gateway.ping, detected {elapsed:.3f} s (ratio {elapsed / 1.0:.3f})",
            app_pings == 0 and elapsed <= 1.03,
        )
