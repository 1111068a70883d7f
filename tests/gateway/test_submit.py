"""Idempotent prompt.submit by submission_ref: within a process and across a gateway restart."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest

from tests.gateway.scripted import ScriptedProvider
from tests.gateway.wsclient import RpcFailure, client, gateway


async def test_same_ref_twice_runs_once_and_returns_the_original_result(data_dir: Path) -> None:
    provider = ScriptedProvider()
    async with gateway(data_dir, provider) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        first = await c.call("prompt.submit", session_id=sid, text="hi", submission_ref="r-1")
        await c.wait_event("message.complete", sid)
        again = await c.call("prompt.submit", session_id=sid, text="hi", submission_ref="r-1")
        assert again == first == {"status": "streaming", "submission_ref": "r-1"}
        with pytest.raises(RpcFailure) as conflict:
            await c.call("prompt.submit", session_id=sid, text="other", submission_ref="r-1")
        assert conflict.value.code == -32602
        assert "different payload" in conflict.value.message
        hist = await c.call("session.history", session_id=sid)
        assert [m["text"] for m in hist["messages"]] == ["hi", "Hello, world"]
        assert len(provider.calls) == 1
        stats = await c.call("debug.stats")
        assert stats["served_submits"] == 1 and stats["duplicate_submits"] == 1


async def test_retry_with_restaged_attachment_does_not_leave_it_staged(data_dir: Path) -> None:
    provider = ScriptedProvider()
    note = base64.b64encode(b"hello file").decode()
    async with gateway(data_dir, provider) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        for _ in range(2):  # the client's retry path: clear, re-stage, resubmit the same ref
            await c.call("attachments.clear", session_id=sid)
            await c.call("file.attach_bytes", session_id=sid, content_base64=note, filename="f.txt")
            await c.call("prompt.submit", session_id=sid, text="read", submission_ref="att-1")
        await c.wait_event("message.complete", sid)
        assert (await c.call("attachments.clear", session_id=sid))["cleared"] == 0
        await c.call("prompt.submit", session_id=sid, text="next")
        await c.wait_event("message.complete", sid, n=2)
        assert "hello file" not in provider.calls[1][-1].content
        assert len(provider.calls) == 2


async def test_ref_is_remembered_across_a_gateway_restart(data_dir: Path) -> None:
    provider = ScriptedProvider()
    async with gateway(data_dir, provider) as gw, client(gw.url) as c:
        created = await c.call("session.create")
        sid, key = created["session_id"], created["stored_session_id"]
        await c.call("prompt.submit", session_id=sid, text="once", submission_ref="cross-1")
        await c.wait_event("message.complete", sid)
        epoch = gw.epoch
    second = ScriptedProvider()
    async with gateway(data_dir, second) as gw, client(gw.url) as c:
        assert c.events[0]["payload"]["replay_epoch"] != epoch
        snap = await c.call("session.resume", session_id=key)
        again = await c.call(
            "prompt.submit", session_id=snap["session_id"], text="once", submission_ref="cross-1"
        )
        assert again == {"status": "streaming", "submission_ref": "cross-1"}
        hist = await c.call("session.history", session_id=snap["session_id"])
        assert [m["text"] for m in hist["messages"]] == ["once", "Hello, world"]
        assert second.calls == []
        assert gw.store.served_submits() == 1


async def test_queued_submit_dedupes_while_waiting(data_dir: Path) -> None:
    hold = asyncio.Event()
    provider = ScriptedProvider(hold=hold)
    async with gateway(data_dir, provider) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        await c.call("prompt.submit", session_id=sid, text="a", submission_ref="q-a")
        queued = await c.call("prompt.submit", session_id=sid, text="b", submission_ref="q-b")
        assert queued["status"] == "queued"
        assert (
            await c.call("prompt.submit", session_id=sid, text="b", submission_ref="q-b") == queued
        )
        hold.set()
        await c.wait_event("message.complete", sid, n=2)
        assert [call[-1].content for call in provider.calls] == ["a", "b"]


async def test_a_submit_that_cuts_before_a_user_turn_replaces_it_and_what_follows(
    data_dir: Path,
) -> None:
    """Hermes' prompt.submit{truncate_before_user_ordinal} (Regenerate, edit-and-resend): the
    prompt takes the place of that turn; the agent sees only what is left before it."""
    provider = ScriptedProvider()
    async with gateway(data_dir, provider) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        for n, text in enumerate(("one", "two"), 1):
            await c.call("prompt.submit", session_id=sid, text=text)
            await c.wait_event("message.complete", sid, n=n)
        with pytest.raises(RpcFailure) as gone:
            await c.call("prompt.submit", session_id=sid, text="x", truncate_before_user_ordinal=2)
        assert gone.value.code == 4018
        await c.call(
            "prompt.submit", session_id=sid, text="two again", truncate_before_user_ordinal=1
        )
        await c.wait_event("message.complete", sid, n=3)
        hist = await c.call("session.history", session_id=sid)
        users = [m["text"] for m in hist["messages"] if m["role"] == "user"]
        assert users == ["one", "two again"]
        assert [m.content for m in provider.calls[-1] if m.role == "user"] == ["one", "two again"]
