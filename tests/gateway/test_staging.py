"""Staged attachments live on disk (quota, expiry, restart); idle detached sessions are reaped."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path

from desktop.common.clock import ManualClock
from desktop.gateway.sessions.hub import IDLE_SESSION_TIMEOUT
from tests.gateway.scripted import ScriptedProvider
from tests.gateway.wsclient import RpcFailure, client, gateway
from tests.reliability.rig import until

PNG = b"\x89PNG\r\n\x1a\n"


def image(size: int, seed: int = 0) -> tuple[bytes, str]:
    data = PNG + os.urandom(size - len(PNG)) if seed == 0 else PNG + bytes([seed]) * size
    return data, base64.b64encode(data).decode("ascii")


def staged_files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "attachments" / "staged").rglob("*.bin"))


async def test_a_staged_image_is_a_file_in_the_data_dir_until_its_turn_ends(
    data_dir: Path,
) -> None:
    provider = ScriptedProvider()
    async with gateway(data_dir, provider) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        data, b64 = image(200_000)
        reply = await c.call(
            "image.attach_bytes", session_id=sid, content_base64=b64, filename="a.png"
        )
        assert reply["count"] == 1 and reply["size"] == len(data)
        [on_disk] = staged_files(data_dir)
        assert on_disk.read_bytes() == data
        assert gw.hub.stats()["staged_bytes"] == len(data)
        await c.call("prompt.submit", session_id=sid, text="look")
        await c.wait_event("message.complete", sid)
        sent = provider.calls[-1][-1]
        assert sent.images == (f"data:image/png;base64,{b64}",)
        assert staged_files(data_dir) == []
        assert list((data_dir / "attachments" / "turns").iterdir()) == []
        assert gw.hub.stats()["staged_bytes"] == 0


async def test_the_staging_quota_names_itself_and_frees_on_clear(data_dir: Path) -> None:
    async with (
        gateway(data_dir, ScriptedProvider(), staged_quota_bytes=300_000) as gw,
        client(gw.url) as c,
    ):
        sid = (await c.call("session.create"))["session_id"]
        _, b64 = image(120_000)
        for _ in range(2):
            await c.call("image.attach_bytes", session_id=sid, content_base64=b64, filename="a.png")
        try:
            await c.call("image.attach_bytes", session_id=sid, content_base64=b64, filename="a.png")
        except RpcFailure as exc:
            assert exc.code == -32602 and "attachment space is full" in exc.message
        else:
            raise AssertionError("the quota let a third attachment in")
        assert (await c.call("attachments.clear", session_id=sid))["cleared"] == 2
        assert staged_files(data_dir) == []
        await c.call("image.attach_bytes", session_id=sid, content_base64=b64, filename="a.png")


async def test_staged_attachments_survive_a_gateway_restart(data_dir: Path) -> None:
    _, b64 = image(50_000)
    async with gateway(data_dir, ScriptedProvider()) as gw, client(gw.url) as c:
        created = await c.call("session.create")
        key = created["stored_session_id"]
        await c.call(
            "image.attach_bytes",
            session_id=created["session_id"],
            content_base64=b64,
            filename="kept.png",
        )
    provider = ScriptedProvider()
    async with gateway(data_dir, provider) as gw, client(gw.url) as c:
        sid = (await c.call("session.resume", session_id=key))["session_id"]
        await c.call("prompt.submit", session_id=sid, text="what is it?")
        await c.wait_event("message.complete", sid)
        assert provider.calls[-1][-1].images == (f"data:image/png;base64,{b64}",)
        hist = await c.call("session.history", session_id=sid)
        assert hist["messages"][0]["attachments"][0]["filename"] == "kept.png"


async def test_idle_detached_sessions_are_reaped_and_resume_by_stored_id(data_dir: Path) -> None:
    clock = ManualClock()
    async with gateway(data_dir, ScriptedProvider(), clock) as gw:
        async with client(gw.url) as a:
            created = await a.call("session.create", title="kept")
            sid, key = created["session_id"], created["stored_session_id"]
            await a.call("prompt.submit", session_id=sid, text="hello")
            await a.wait_event("message.complete", sid)
            _, b64 = image(10_000)
            await a.call("image.attach_bytes", session_id=sid, content_base64=b64, filename="x.png")
        await until(lambda: gw.hub.get(sid).owner is None, "the gateway to see the socket go")
        clock.advance(IDLE_SESSION_TIMEOUT - 1)
        assert gw.hub.stats()["sessions"] == 1  # not yet
        clock.advance(2)
        assert gw.hub.stats()["sessions"] == 0 and gw.hub.stats()["reaped_sessions"] == 1
        assert clock.pending == 0  # no timer left behind while idle
        async with client(gw.url) as b:
            try:
                await b.call("session.activate", session_id=sid)
            except RpcFailure as exc:
                assert exc.code == 4001  # the client's cue to resume by stored id
            else:
                raise AssertionError("a reaped session still answered under its runtime id")
            snap = await b.call("session.resume", session_id=key)
            assert [m["text"] for m in snap["messages"]] == ["hello", "Hello, world"]
            assert snap["info"]["title"] == "kept"
            # What it had staged is still there for its next prompt.
            assert len(gw.hub.get(snap["session_id"]).staged) == 1


async def test_a_running_detached_session_is_not_reaped_before_its_turn_ends(
    data_dir: Path,
) -> None:
    clock = ManualClock()
    hold = asyncio.Event()
    async with gateway(data_dir, ScriptedProvider(hold=hold), clock) as gw:
        async with client(gw.url) as a:
            sid = (await a.call("session.create"))["session_id"]
            await a.call("prompt.submit", session_id=sid, text="long")
            await a.wait_event("message.delta", sid)
        await until(lambda: gw.hub.get(sid).owner is None, "the gateway to see the socket go")
        clock.advance(IDLE_SESSION_TIMEOUT * 3)
        session = gw.hub.get(sid)
        assert session.running
        hold.set()
        assert session.worker is not None
        await session.worker
        clock.advance(1)
        assert gw.hub.stats()["sessions"] == 0


async def test_abandoned_staged_files_expire(data_dir: Path) -> None:
    clock = ManualClock()
    async with gateway(data_dir, ScriptedProvider(), clock, staged_ttl=600) as gw:
        async with client(gw.url) as a:
            sid = (await a.call("session.create"))["session_id"]
            _, b64 = image(10_000)
            await a.call("image.attach_bytes", session_id=sid, content_base64=b64, filename="x.png")
        await until(lambda: gw.hub.get(sid).owner is None, "the gateway to see the socket go")
        clock.advance(IDLE_SESSION_TIMEOUT + 1)  # reaped: its staged file stays, for a resume
        assert len(staged_files(data_dir)) == 1
        clock.advance(600)
        async with client(gw.url) as b:  # the next staging sweeps what expired meanwhile
            other = (await b.call("session.create"))["session_id"]
            await b.call(
                "image.attach_bytes", session_id=other, content_base64=b64, filename="y.png"
            )
        [left] = staged_files(data_dir)
        assert left.read_bytes().startswith(PNG)
        assert gw.hub.stats()["staged_bytes"] == left.stat().st_size


async def test_a_full_quota_first_drops_what_no_open_chat_holds(data_dir: Path) -> None:
    clock = ManualClock()
    _, b64 = image(120_000)
    async with gateway(data_dir, ScriptedProvider(), clock, staged_quota_bytes=300_000) as gw:
        async with client(gw.url) as a:
            old = (await a.call("session.create"))["session_id"]
            for _ in range(2):
                await a.call(
                    "image.attach_bytes", session_id=old, content_base64=b64, filename="o.png"
                )
        await until(lambda: gw.hub.get(old).owner is None, "the gateway to see the socket go")
        clock.advance(IDLE_SESSION_TIMEOUT + 1)  # reaped: its two files stay on disk
        assert len(staged_files(data_dir)) == 2
        async with client(gw.url) as b:
            new = (await b.call("session.create"))["session_id"]
            await b.call("image.attach_bytes", session_id=new, content_base64=b64, filename="n.png")
            assert len(staged_files(data_dir)) == 2  # the oldest abandoned one made room
            await b.call("image.attach_bytes", session_id=new, content_base64=b64, filename="n.png")
            try:  # now open chats hold it all: refused, by name
                await b.call(
                    "image.attach_bytes", session_id=new, content_base64=b64, filename="n.png"
                )
            except RpcFailure as exc:
                assert "attachment space is full" in exc.message
            else:
                raise AssertionError("the quota let in more than it holds")
