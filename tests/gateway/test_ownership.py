"""Stream ownership, detached turns and replay after reconnect, over real sockets."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from desktop.common.clock import ManualClock
from tests.gateway.scripted import ScriptedProvider
from tests.gateway.wsclient import RpcFailure, client, gateway


async def test_live_owner_refuses_others_with_4091_until_it_goes_silent(data_dir: Path) -> None:
    clock = ManualClock()
    async with gateway(data_dir, ScriptedProvider(), clock) as gw:  # noqa: SIM117
        async with client(gw.url) as a, client(gw.url) as b:
            sid = (await a.call("session.create"))["session_id"]
            for method, params in [
                ("session.activate", {"session_id": sid}),
                ("prompt.submit", {"session_id": sid, "text": "hijack"}),
            ]:
                with pytest.raises(RpcFailure) as owned:
                    await b.call(method, **params)
                assert owned.value.code == 4091
                assert owned.value.message == "session stream is owned by another active client"
            clock.advance(44)
            assert (await a.call("gateway.ping"))["ok"]  # A is heard from: stays owner
            clock.advance(44)
            with pytest.raises(RpcFailure):
                await b.call("session.activate", session_id=sid)
            clock.advance(46)  # A silent past the 45 s deadline: replaced at once
            snap = await b.call("session.activate", session_id=sid)
            assert snap["session_id"] == sid
            await b.call("prompt.submit", session_id=sid, text="mine now")
            await b.wait_event("message.complete", sid)
            assert a.of(sid) == [] or all(e["type"] == "session.info" for e in a.of(sid))
            assert gw.hub.stats()["served_submits"] == 1


async def test_closed_owner_is_replaced_at_once_and_turn_continues(data_dir: Path) -> None:
    hold = asyncio.Event()
    async with gateway(data_dir, ScriptedProvider(hold=hold)) as gw:
        async with client(gw.url) as a:
            sid = (await a.call("session.create"))["session_id"]
            await a.call("prompt.submit", session_id=sid, text="keep going")
            first = await a.wait_event("message.delta", sid)
            last_seen = max(e["seq"] for e in a.of(sid))
        assert first["payload"]["text"] == "Hello"
        async with client(gw.url) as b:
            snap = await b.call("session.activate", session_id=sid)
            assert snap["running"] is True
            assert snap["inflight"] == {
                "user": "keep going",
                "assistant": "Hello",
                "streaming": True,
            }
            assert snap["messages"] == []
            hold.set()
            done = await b.wait_event("message.complete", sid)
            assert done["payload"]["text"] == "Hello, world"
            replay = await b.call("session.events.since", session_id=sid, last_seen=last_seen)
            assert replay["complete"] is True and replay["replay_epoch"] == gw.epoch
            replayed = "".join(
                e["payload"]["text"] for e in replay["events"] if e["type"] == "message.delta"
            )
            assert replayed == ", world"
            assert replay["events"][-1]["type"] in {"message.complete", "status.update"}
            assert [e["seq"] for e in replay["events"]] == list(
                range(last_seen + 1, last_seen + 1 + len(replay["events"]))
            )
            live = [e for e in b.of(sid) if e["seq"] > snap["last_seq"]]
            assert live == [e for e in replay["events"] if e["seq"] > snap["last_seq"]]


async def test_turn_finishing_while_detached_is_replayable(data_dir: Path) -> None:
    hold = asyncio.Event()
    provider = ScriptedProvider(hold=hold)
    async with gateway(data_dir, provider) as gw:
        async with client(gw.url) as a:
            sid = (await a.call("session.create"))["session_id"]
            await a.call("prompt.submit", session_id=sid, text="q")
            await a.wait_event("message.delta", sid)
            last_seen = max(e["seq"] for e in a.of(sid))
        worker = gw.hub.get(sid).worker
        assert worker is not None and not worker.done()
        hold.set()
        await worker  # the turn finishes with nobody attached
        async with client(gw.url) as b:
            replay = await b.call("session.events.since", session_id=sid, last_seen=last_seen)
            done = next(e for e in replay["events"] if e["type"] == "message.complete")
            assert done["payload"]["text"] == "Hello, world"
            snap = await b.call("session.activate", session_id=sid)
            assert [m["text"] for m in snap["messages"]] == ["q", "Hello, world"]


async def test_replay_reports_incomplete_when_the_buffer_overflowed(data_dir: Path) -> None:
    async with gateway(data_dir, ScriptedProvider(), replay_limit=3) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        await c.call("prompt.submit", session_id=sid, text="go")
        await c.wait_event("message.complete", sid)
        await c.wait_event("status.update", sid, n=2)
        last = max(e["seq"] for e in c.of(sid))
        stale = await c.call("session.events.since", session_id=sid, last_seen=0)
        assert stale["complete"] is False
        assert [e["seq"] for e in stale["events"]] == [last - 2, last - 1, last]
        fresh = await c.call("session.events.since", session_id=sid, last_seen=last - 1)
        assert fresh["complete"] is True and len(fresh["events"]) == 1
