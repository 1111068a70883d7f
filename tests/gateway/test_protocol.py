"""Protocol conformance of the embedded gateway over real sockets: methods, events, error codes."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosedError, InvalidStatus

from tests.gateway.scripted import ScriptedProvider
from tests.gateway.wsclient import TOKEN, RpcFailure, client, gateway

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


async def test_first_frame_is_gateway_ready_with_embedded_capabilities(data_dir: Path) -> None:
    async with gateway(data_dir, ScriptedProvider()) as gw, client(gw.url) as c:
        ready = c.events[0]
        assert ready["type"] == "gateway.ready"
        payload = ready["payload"]
        assert payload["heartbeat"] is True
        assert payload["protocol"] == {"version": 1}
        methods = set(payload["capabilities"].pop("methods"))
        assert {"gateway.ping", "prompt.submit", "session.history"} <= methods
        assert not methods & {"session.steer", "session.branch"}, "listed only when served"
        assert payload["capabilities"] == {
            "event_replay": True,
            "client_turn_id": False,
            "submission_ref": True,
            "stream_ownership": True,
            "file_attachments": True,
            "history_window": True,
        }
        assert payload["replay_epoch"] == gw.epoch
        assert payload["server"]["name"] == "hermes-qt-gateway"
        assert await c.call("gateway.ping") == {"ok": True}


@pytest.mark.parametrize("token", ["wrong", ""])
async def test_bad_or_missing_token_is_refused_with_403(data_dir: Path, token: str) -> None:
    async with gateway(data_dir, ScriptedProvider()) as gw:
        with pytest.raises(InvalidStatus) as info:
            await connect(f"{gw.url}?token={token}" if token else gw.url)
        assert info.value.response.status_code == 403


async def test_bearer_header_is_accepted_and_other_paths_are_404(data_dir: Path) -> None:
    async with gateway(data_dir, ScriptedProvider()) as gw:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with connect(gw.url, additional_headers=headers) as ws:
            ready = json.loads(await ws.recv())
            assert ready["params"]["type"] == "gateway.ready"
        with pytest.raises(InvalidStatus) as info:
            await connect(gw.url.replace("/api/ws", "/other") + f"?token={TOKEN}")
        assert info.value.response.status_code == 404


async def test_create_submit_streams_numbered_events_and_persists(data_dir: Path) -> None:
    provider = ScriptedProvider()
    async with gateway(data_dir, provider) as gw, client(gw.url) as c:
        created = await c.call("session.create", title="")
        sid = created["session_id"]
        assert created["stored_session_id"] != sid
        assert created["message_count"] == 0 and created["messages"] == []
        assert created["info"]["stored_session_id"] == created["stored_session_id"]
        reply = await c.call("prompt.submit", session_id=sid, text="What is up?")
        assert reply["status"] == "streaming"
        done = await c.wait_event("message.complete", sid)
        assert done["payload"]["text"] == "Hello, world"
        assert done["payload"]["status"] == "complete"
        assert done["payload"]["usage"]["completion_tokens"] == 3
        events = c.of(sid)
        seqs = [e["seq"] for e in events]
        assert seqs == list(range(1, len(seqs) + 1))
        types = [e["type"] for e in events]
        assert types.index("message.start") < types.index("message.delta")
        assert "session.title" in types
        streamed = "".join(e["payload"]["text"] for e in events if e["type"] == "message.delta")
        assert streamed == "Hello, world"
        await c.wait_event("status.update", sid, n=2)
        hist = await c.call("session.history", session_id=sid)
        assert [(m["role"], m["text"]) for m in hist["messages"]] == [
            ("user", "What is up?"),
            ("assistant", "Hello, world"),
        ]
        listed = await c.call("session.list")
        assert listed["sessions"][0]["id"] == created["stored_session_id"]
        assert listed["sessions"][0]["title"] == "What is up?"
        assert listed["sessions"][0]["message_count"] == 2
        assert provider.calls[0][-1].content == "What is up?"


async def test_title_close_delete_and_unknown_ids(data_dir: Path) -> None:
    async with gateway(data_dir, ScriptedProvider()) as gw, client(gw.url) as c:
        s = await c.call("session.create")
        sid, key = s["session_id"], s["stored_session_id"]
        assert (await c.call("session.title", session_id=sid, title="Trip"))["title"] == "Trip"
        assert (await c.wait_event("session.title", sid))["payload"]["title"] == "Trip"
        assert (await c.call("session.close", session_id=sid))["closed"] is True
        with pytest.raises(RpcFailure) as gone:
            await c.call("session.activate", session_id=sid)
        assert gone.value.code == 4001
        resumed = await c.call("session.resume", session_id=key)
        assert resumed["session_id"] != sid and resumed["session_key"] == key
        assert resumed["info"]["title"] == "Trip"
        await c.call("session.delete", session_id=resumed["session_id"])
        with pytest.raises(RpcFailure) as unknown:
            await c.call("session.resume", session_id=key)
        assert unknown.value.code == 4007
        assert (await c.call("session.list"))["sessions"] == []


async def test_interrupt_ends_the_turn_as_interrupted(data_dir: Path) -> None:
    import asyncio

    hold = asyncio.Event()
    provider = ScriptedProvider(hold=hold)
    async with gateway(data_dir, provider) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        await c.call("prompt.submit", session_id=sid, text="long one")
        await c.wait_event("message.delta", sid)
        assert (await c.call("session.interrupt", session_id=sid))["status"] == "interrupted"
        done = await c.wait_event("message.complete", sid)
        assert done["payload"]["status"] == "interrupted"
        assert done["payload"]["text"] == "Hello"
        assert (await c.call("session.interrupt", session_id=sid))["status"] == "not_interrupted"
        hist = await c.call("session.history", session_id=sid)
        assert hist["messages"][-1]["status"] == "interrupted"


async def test_busy_session_queues_the_next_prompt(data_dir: Path) -> None:
    import asyncio

    hold = asyncio.Event()
    async with gateway(data_dir, ScriptedProvider(hold=hold)) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        assert (await c.call("prompt.submit", session_id=sid, text="one"))["status"] == "streaming"
        assert (await c.call("prompt.submit", session_id=sid, text="two"))["status"] == "queued"
        snap = await c.call("session.activate", session_id=sid)
        assert snap["status"] == "queued" and snap["running"] is True
        hold.set()
        await c.wait_event("message.complete", sid, n=2)
        hist = await c.call("session.history", session_id=sid)
        assert [m["text"] for m in hist["messages"]] == [
            "one",
            "Hello, world",
            "two",
            "Hello, world",
        ]


async def test_provider_error_sends_error_then_complete_with_error(data_dir: Path) -> None:
    from desktop.gateway.providers.base import ChunkKind, ProviderError
    from tests.gateway.scripted import Chunk

    provider = ScriptedProvider(
        [Chunk(ChunkKind.NOTICE, "primary down, using fallback"), Chunk(ChunkKind.THINKING, "hm")],
        error=ProviderError("bad API key", transport=False),
    )
    async with gateway(data_dir, provider) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        await c.call("prompt.submit", session_id=sid, text="hi")
        done = await c.wait_event("message.complete", sid)
        assert done["payload"]["status"] == "error"
        assert (await c.wait_event("error", sid))["payload"]["message"] == "bad API key"
        assert "fallback" in (await c.wait_event("notice", sid))["payload"]["message"]
        assert (await c.wait_event("reasoning.delta", sid))["payload"]["text"] == "hm"


async def test_malformed_frames_get_json_rpc_errors_and_socket_survives(data_dir: Path) -> None:
    async with gateway(data_dir, ScriptedProvider()) as gw, client(gw.url) as c:
        assert (await c.send_raw("{not json"))["error"]["code"] == -32700
        assert (await c.send_raw(b"\xff\xfe"))["error"]["code"] == -32700
        assert (await c.send_raw("[1, 2]"))["error"]["code"] == -32600
        assert (await c.send_raw('{"jsonrpc":"2.0","id":5}'))["error"]["code"] == -32600
        bad_params = '{"jsonrpc":"2.0","id":6,"method":"gateway.ping","params":[1]}'
        assert (await c.send_raw(bad_params))["error"]["code"] == -32600
        nope = await c.request("no.such.method", {})
        assert nope["error"]["code"] == -32601
        with pytest.raises(RpcFailure) as missing:
            await c.call("prompt.submit", session_id="nope", text="x")
        assert missing.value.code == 4001
        sid = (await c.call("session.create"))["session_id"]
        with pytest.raises(RpcFailure) as empty:
            await c.call("prompt.submit", session_id=sid, text="")
        assert empty.value.code == -32602
        with pytest.raises(RpcFailure) as badref:
            await c.call("prompt.submit", session_id=sid, text="x", submission_ref="a b")
        assert badref.value.code == -32602
        assert (await c.send_raw('{"jsonrpc":"2.0","id":7,"method":"gateway.ping"}\n'))[
            "result"
        ] == {"ok": True}


async def test_oversized_frame_closes_with_1009(data_dir: Path) -> None:
    async with gateway(data_dir, ScriptedProvider()) as gw, client(gw.url) as c:
        await c.ws.send("x" * (16 * 1024 * 1024 + 1))
        await c.closed.wait()
        with pytest.raises(ConnectionClosedError):
            await c.ws.recv()
        assert c.ws.close_code == 1009 or (c.ws.close_rcvd and c.ws.close_rcvd.code == 1009)
        async with client(gw.url) as again:
            assert await again.call("gateway.ping") == {"ok": True}


async def test_attachments_are_staged_inlined_and_clearable(data_dir: Path) -> None:
    provider = ScriptedProvider()
    async with gateway(data_dir, provider) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        b64 = base64.b64encode(PNG).decode()
        img = await c.call(
            "image.attach_bytes", session_id=sid, content_base64=b64, filename="a.png"
        )
        assert img["attached"] is True and img["count"] == 1 and img["kind"] == "image"
        assert (await c.call("attachments.clear", session_id=sid))["cleared"] == 1
        note = base64.b64encode(b"line one\nline two").decode()
        got = await c.call(
            "file.attach_bytes", session_id=sid, content_base64=note, filename="n.txt"
        )
        assert got["count"] == 1 and got["kind"] == "text"
        await c.call("image.attach_bytes", session_id=sid, content_base64=b64, filename="b.png")
        await c.call("prompt.submit", session_id=sid, text="see files")
        await c.wait_event("message.complete", sid)
        sent = provider.calls[0][-1]
        assert "[attached file: n.txt]" in sent.content and "line two" in sent.content
        assert len(sent.images) == 1 and sent.images[0].startswith("data:image/png;base64,")
        hist = await c.call("session.history", session_id=sid)
        assert [a["filename"] for a in hist["messages"][0]["attachments"]] == ["n.txt", "b.png"]
        for bad in ("%%%", base64.b64encode(b"not an image").decode()):
            with pytest.raises(RpcFailure) as err:
                await c.call("image.attach_bytes", session_id=sid, content_base64=bad, filename="x")
            assert err.value.code == -32602
        huge = base64.b64encode(b"a" * (5 * 1024 * 1024 + 1)).decode()
        with pytest.raises(RpcFailure) as big:
            await c.call("file.attach_bytes", session_id=sid, content_base64=huge, filename="h")
        assert "too large" in big.value.message


async def test_approval_and_clarify_responses_are_accepted(data_dir: Path) -> None:
    async with gateway(data_dir, ScriptedProvider()) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        assert (await c.call("approval.respond", session_id=sid, choice="once"))["ok"] is True
        assert (await c.call("clarify.respond", session_id=sid, answer="yes"))["ok"] is True


async def test_a_long_history_is_counted_and_paged_without_reading_all_of_it(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with gateway(data_dir, ScriptedProvider()) as gw, client(gw.url) as c:
        gw.store.create_session("long", "Long", "desktop", 1.0)
        gw.store.import_messages(
            "long", [("user" if i % 2 == 0 else "assistant", f"m{i}", 2.0 + i) for i in range(1000)]
        )
        read_all: list[str] = []
        whole = gw.store.messages
        monkeypatch.setattr(gw.store, "messages", lambda sid: read_all.append(sid) or whole(sid))
        snap = await c.call("session.resume", session_id="long", omit_messages=True)
        assert snap["message_count"] == 1000 and "messages" not in snap
        page = await c.call("session.history", session_id="long", offset=800, limit=200)
        assert (page["count"], page["offset"]) == (1000, 800)
        assert [m["text"] for m in page["messages"]] == [f"m{i}" for i in range(800, 1000)]
        older = await c.call("session.history", session_id="long", offset=500, limit=300)
        assert [m["text"] for m in older["messages"]] == [f"m{i}" for i in range(500, 800)]
        assert read_all == [], "a page or a count read the whole history"
