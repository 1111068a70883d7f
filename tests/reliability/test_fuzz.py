"""Fuzzing (scenario 15): arbitrary frames into the client, arbitrary requests into the gateway."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from desktop.core.link.client import JsonRpcGatewayClient
from tests.core.fakes import FakeGateway
from tests.gateway.wsclient import client as ws_client
from tests.gateway.wsclient import gateway
from tests.reliability.providers import ScriptedProvider

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
rpc_like = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
        "id": st.none() | st.integers() | st.text(max_size=5) | st.booleans(),
        "method": st.sampled_from(["event", "session.list", "prompt.submit", "x"]) | st.text(),
        "params": json_values,
        "result": json_values,
        "error": json_values,
    },
)
frames = st.one_of(
    st.text(max_size=60),
    json_values.map(json.dumps),
    rpc_like.map(json.dumps),
    st.binary(max_size=30),
)
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


async def _client_survives(batch: list[Any]) -> None:
    fake = FakeGateway()
    client = JsonRpcGatewayClient("ws://127.0.0.1:1/api/ws", transport_factory=fake.factory)
    try:
        await client.connect()
        for frame in batch:
            fake.peer.transport._deliver(frame)
        call = asyncio.ensure_future(client.call("session.list", timeout=5))
        while not fake.peer.requests("session.list"):
            await asyncio.sleep(0)
        fake.peer.reply(fake.peer.requests("session.list")[-1]["id"], {"sessions": []})
        assert await call == {"sessions": []}
        assert client.is_open
    finally:
        await client.close()


@FUZZ
@given(st.lists(frames, max_size=8))
def test_client_frame_handling_fuzzed(batch: list[Any]) -> None:
    """No crash, no hang, no unhandled exception; the same socket still answers calls."""
    asyncio.run(asyncio.wait_for(_client_survives(batch), 10))


def _well_formed(reply: dict[str, Any]) -> bool:
    if reply.get("jsonrpc") != "2.0" or "id" not in reply:
        return False
    if ("result" in reply) == ("error" in reply):
        return False
    err = reply.get("error")
    return err is None or (isinstance(err.get("code"), int) and isinstance(err.get("message"), str))


async def _gateway_survives(data: Path, batch: list[Any]) -> None:
    async with (
        gateway(data, ScriptedProvider(words=2)) as server,
        ws_client(server.url) as c,
    ):
        for frame in batch:
            await c.ws.send(frame)
        probe = await c.request("gateway.ping", {})
        assert probe.get("result") == {"ok": True}
        assert all(_well_formed(r) for r in c.replies), c.replies


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(rpc_like.map(json.dumps), st.text(max_size=40)), max_size=6))
def test_gateway_request_handling_fuzzed(batch: list[Any]) -> None:
    """Every reply well-formed and the server keeps serving the same socket."""
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(asyncio.wait_for(_gateway_survives(Path(tmp), batch), 20))
