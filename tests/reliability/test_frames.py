"""Fault matrix 12-15 and 17: stale generations, duplicates, gaps, garbage, no heartbeat."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from desktop.core.link.client import JsonRpcGatewayClient
from desktop.core.link.protocol import Event, encode_event
from desktop.core.link.transport import Transport, open_websocket
from desktop.gateway.rpc.server import GatewayConfig, GatewayServer
from tests.reliability.conftest import RecordFigure
from tests.reliability.filters import frame_kind, legacy_ready, without_final_text
from tests.reliability.providers import ScriptedProvider, expected_reply
from tests.reliability.rig import TOKEN, rig, until

pytestmark = pytest.mark.slow


class LateTransport:
    """A real socket whose reader can be held while frames keep arriving, and that hands a held
    frame to its reader even after the reader was cancelled (as a transport that does not stop
    at once on cancel would): old-generation frames that really reach the client."""

    def __init__(self, inner: Transport) -> None:
        self._inner = inner
        self.holding = False
        self.held: list[str | bytes] = []
        self.release = asyncio.Event()
        self.late = 0  # held frames handed to the reader after it was cancelled

    @property
    def local_open(self) -> bool:
        return self._inner.local_open

    @property
    def bytes_received(self) -> int:
        return self._inner.bytes_received

    async def send(self, text: str) -> None:
        await self._inner.send(text)

    async def recv(self) -> str | bytes:
        while True:
            try:
                frame = await self._inner.recv()
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not self.held or task is None:
                    raise
                task.uncancel()
                await self.release.wait()
                self.late += 1
                return self.held.pop(0)
            if not self.holding:
                return frame
            self.held.append(frame)

    async def ping(self) -> float:
        return await self._inner.ping()

    def abort(self) -> None:
        abort = getattr(self._inner, "abort", None)
        if abort is not None:
            abort()

    async def close(self) -> None:
        await self._inner.close()


async def test_12_late_frames_from_old_generation(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    """Frames of a replaced socket reach the client after the new one is open: all refused."""
    gateway = GatewayServer(
        GatewayConfig(data_dir=tmp_path / "gateway", token=TOKEN, ping_interval=None),
        ScriptedProvider(words=200, interval=0.01),
    )
    await gateway.start()
    sockets: list[LateTransport] = []

    async def factory(url: str, **kwargs: Any) -> Transport:
        sockets.append(LateTransport(await open_websocket(url, **kwargs)))
        return sockets[-1]

    client = JsonRpcGatewayClient(gateway.url, token=TOKEN, transport_factory=factory)
    heard: list[tuple[str, int]] = []  # (event type, generation) heard after generation 2 opened
    second_open = False

    def listener(event: Event, generation: int) -> None:
        if second_open:
            heard.append((event.type, generation))

    client.subscribe(listener)
    try:
        await client.connect()
        old = sockets[0]
        created = await client.call("session.create", {})
        await client.call("prompt.submit", {"session_id": created["session_id"], "text": "long"})
        old.holding = True  # the reader waits; the reply keeps streaming into the socket
        await until(lambda: len(old.held) >= 3, "deltas held on the old socket")
        await client.connect()  # generation 2 replaces 1; 1's reader is cancelled while held
        second_open = True
        old.release.set()
        await until(lambda: old.late == 1, "a held frame handed to the old reader")
        await until(lambda: client.stats.stale_frames or heard, "the old frame judged")
        result = await client.call("session.list", {})
        stale = [h for h in heard if h[1] != client.generation]
        record_figure(
            "12",
            "frames of a replaced socket that reach the client: all refused, 0 reach listeners",
            f"{old.late} reached the client after generation 2 opened, "
            f"{client.stats.stale_frames} refused, {len(stale)} reached listeners; "
            f"generation 2 call answered: {isinstance(result, dict)}",
            old.late == 1
            and client.stats.stale_frames == 1
            and not stale
            and isinstance(result, dict),
        )
    finally:
        for sock in sockets:
            sock.release.set()
        await client.close()
        await gateway.stop()


async def test_13_duplicate_events_and_replies(tmp_path: Path, record_figure: RecordFigure) -> None:
    async with rig(tmp_path, words=30) as r:
        # Every frame twice; message.complete without its full text, so that it cannot heal a
        # reply that doubled while streaming.
        r.inbound_filter = lambda frame: [f for f in without_final_text(frame) for f in (f, f)]
        await r.wait_online()
        key = await r.create_session()
        entry = r.submit(key, "twice")
        expected = expected_reply("twice", 30)
        conv = r.router.conversation(key)
        assert conv is not None
        await until(lambda: not conv.running and bool(r.replies(key)), "the turn ended", 20)
        await r.settled()
        dup_replies = sum(c.stats.duplicate_replies for c in r.clients)
        replies = r.replies(key)
        sends = r.history.sends(r.history.ops[entry.submission_ref])
        assert r.problems() == []
        record_figure(
            "13",
            "every frame twice: streamed reply exact (no healing by message.complete), "
            "each call answered once",
            f"{len(replies)} reply, exact={replies == [expected]}, "
            f"{dup_replies} duplicate replies ignored, prompt sent {sends}x",
            replies == [expected] and dup_replies > 0 and not r.deaths and sends == 1,
        )


async def test_14_gapped_and_reordered_seq(tmp_path: Path, record_figure: RecordFigure) -> None:
    state: dict[str, Any] = {"deltas": 0, "held": None}

    def gap_and_swap(frame: str | bytes) -> list[str | bytes]:
        kind, _ = frame_kind(frame)
        if kind != "message.delta":
            return without_final_text(frame)
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
        conv = r.router.conversation(key)
        assert conv is not None
        await until(lambda: not conv.running and bool(r.replies(key)), "the turn ended", 20)
        replies = r.replies(key)
        since = sum('"session.events.since"' in s for s in r.sent)
        assert state["deltas"] >= 6, "the turn must stream enough deltas to gap and swap"
        record_figure(
            "14",
            "reply exact as streamed after a gap and a swap (message.complete without text); "
            "replayed by session.events.since",
            f"exact={replies == [expected]} after {state['deltas']} deltas, "
            f"{since} session.events.since",
            replies == [expected] and since >= 1 and not r.deaths,
        )


async def test_15_malformed_frames_ignored(tmp_path: Path, record_figure: RecordFigure) -> None:
    # The last one: an escaped emoji (Hermes writes ASCII JSON) 600 levels deep, which once
    # raised out of the decoder and ended the reader with the link still looking alive.
    deep = '{"a":' * 600 + '"\\ud83d\\ude00"' + "}" * 600
    garbage = [
        "{",
        "[]",
        '{"jsonrpc":"1.0"}',
        '{"jsonrpc":"2.0","id":true,"result":1}',
        "\x00",
        '{"jsonrpc":"2.0","method":"event","params":{"type":"x","payload":' + deep + "}}",
    ]
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

        def counted() -> int:
            return sum(c.stats.malformed_frames for c in r.clients)

        # Injecting stops here (pongs keep coming); the last garbage frame rides with the last
        # real one: let the reader get to it.
        r.inbound_filter = None
        with contextlib.suppress(AssertionError):
            await until(lambda: counted() >= injected, "every invalid frame read", 5)
        bad = counted()
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
        assert r.sup.dialect.heartbeat is False
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


def _reseq(frame: str | bytes, seq: int) -> str:
    kind, params = frame_kind(frame)
    return encode_event(
        kind, dict(params.get("payload") or {}), session_id=params.get("session_id"), seq=seq
    )


@pytest.mark.parametrize("fault", ["delta-after-complete", "seq-1e12", "seq-restart"])
async def test_14b_impossible_event_order_is_a_gap(
    tmp_path: Path, record_figure: RecordFigure, fault: str
) -> None:
    """A gateway that breaks event order once: a delta after message.complete, one event
    numbered 10^12, or numbering that starts over without a new replay epoch. Each used to
    freeze the chat (a second bubble streaming for ever; every later event dropped as old);
    now the chat is rebuilt from a snapshot and the next turn shows whole."""
    state: dict[str, Any] = {"deltas": 0, "completes": 0, "offset": None}

    def breaks_order(frame: str | bytes) -> list[str | bytes]:
        kind, params = frame_kind(frame)
        seq = params.get("seq")
        if fault == "seq-restart" and state["offset"] is not None and isinstance(seq, int):
            return [_reseq(frame, seq - state["offset"])]  # numbered from 1 again
        if kind == "message.delta":
            state["deltas"] += 1
            if fault == "seq-1e12" and state["deltas"] == 3:
                return [frame, _reseq(frame, 10**12)]
        if kind == "message.complete" and isinstance(seq, int):
            state["completes"] += 1
            if state["completes"] == 1 and fault == "delta-after-complete":
                sid = params.get("session_id")
                return [frame, encode_event("message.delta", {"text": " stray"}, session_id=sid)]
            if state["completes"] == 1 and fault == "seq-restart":
                state["offset"] = seq
        return [frame]

    async with rig(tmp_path, words=12, word_interval=0.01) as r:
        await r.wait_online()
        key = await r.create_session()
        r.inbound_filter = breaks_order
        conv = r.router.conversation(key)
        assert conv is not None
        r.submit(key, "first")
        await until(lambda: not conv.running and len(r.replies(key)) == 1, "first turn", 20)
        r.submit(key, "second")
        await until(lambda: not conv.running and len(r.replies(key)) == 2, "second turn", 20)
        await r.settled()
        replies = r.replies(key)
        streaming = [m for m in conv.messages if m.streaming]
        wanted = [expected_reply("first", 12), expected_reply("second", 12)]
        record_figure(
            f"14b-{fault}",
            "chat rebuilt from a snapshot, never frozen: both replies exact, none streaming",
            f"replies exact={replies == wanted}, {len(streaming)} streaming, "
            f"running={conv.running}",
            replies == wanted and not streaming and not conv.running and not r.deaths,
        )
