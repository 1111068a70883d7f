"""Core throughput: events decoded and dispatched per second, client side and gateway send path."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from bench.common import Result, emit, profile_to_file
from desktop.common.clock import ManualClock
from desktop.core.errors import TransportClosedError
from desktop.core.link.client import JsonRpcGatewayClient
from desktop.core.link.protocol import Event, encode_event
from desktop.gateway.rpc.connection import Connection
from desktop.gateway.sessions.events import EventLog

BENCH = "throughput"
EVENTS = 50_000
TARGET = 100_000


def frames(n: int) -> list[str]:
    return [
        encode_event("message.delta", {"text": f"tok{i % 50} "}, session_id="r1", seq=i)
        for i in range(1, n + 1)
    ]


class ReplayTransport:
    """A transport whose peer has already written `frames`: recv() never waits on I/O."""

    def __init__(self, items: list[str]) -> None:
        ready = encode_event("gateway.ready", {"heartbeat": True, "protocol": {"version": 1}})
        self._items = iter([ready, *items])
        # Replies to the client's own requests (client.capabilities after gateway.ready),
        # answered as a gateway without the method would: the bench measures events only.
        self._replies: list[str] = []
        self._answered = asyncio.Event()
        self._open = True
        self._sent_ready = False
        # The frames after gateway.ready flow once the bench has seen connect() return.
        self.gate = asyncio.Event()
        self.bytes_received = 0  # not counted: liveness is not what this bench measures

    @property
    def local_open(self) -> bool:
        return self._open

    async def send(self, text: str) -> None:
        frame = json.loads(text)
        if isinstance(frame, dict) and "method" in frame and "id" in frame:
            error = {"code": -32601, "message": f"method not found: {frame['method']}"}
            self._replies.append(json.dumps({"jsonrpc": "2.0", "id": frame["id"], "error": error}))
            self._answered.set()

    async def recv(self) -> str | bytes:
        if self._sent_ready:
            while not self._replies and not self.gate.is_set():
                self._answered.clear()
                waiters = [asyncio.ensure_future(e.wait()) for e in (self.gate, self._answered)]
                _, pending = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                for waiter in pending:
                    waiter.cancel()
            if self._replies:
                return self._replies.pop(0)
        self._sent_ready = True
        item = next(self._items, None)
        if item is None:
            self._open = False
            raise TransportClosedError("replay finished", code=1000)
        return item

    async def ping(self) -> float:
        return 0.0

    async def close(self) -> None:
        self._open = False


async def client_rate(items: list[str]) -> float:
    """Events per second through JsonRpcGatewayClient's reader, decoder and listener dispatch."""
    transport = ReplayTransport(items)

    async def factory(url: str, **_: Any) -> ReplayTransport:
        return transport

    client = JsonRpcGatewayClient(
        "ws://127.0.0.1:1/api/ws", clock=ManualClock(), transport_factory=factory
    )
    seen = 0
    done = asyncio.Event()

    def on_event(event: Event, _gen: int) -> None:
        nonlocal seen
        if event.type == "message.delta":
            seen += 1

    client.subscribe(on_event)
    client.on_closed(lambda *_: done.set())
    await client.connect()
    started = time.perf_counter()
    transport.gate.set()
    await done.wait()
    elapsed = time.perf_counter() - started
    await client.close()
    assert seen == len(items), f"dispatched {seen} of {len(items)}"
    return seen / elapsed


class NullSocket:
    """Just enough of a websockets ServerConnection for Connection's writer."""

    def __init__(self) -> None:
        self.sent = 0

    async def send(self, data: str | bytes, text: bool | None = None) -> None:
        self.sent += 1


async def gateway_rate(n: int) -> float:
    """Events per second through EventLog.append -> Connection.send_event -> its writer task."""
    ws = NullSocket()
    conn = Connection(ws, None, None, ManualClock(), queue_limit=1024)  # type: ignore[arg-type]
    log = EventLog(limit=2000)
    writer = asyncio.get_running_loop().create_task(conn._write())
    started = time.perf_counter()
    for i in range(n):
        conn.send_event(log.append("r1", "message.delta", {"text": f"tok{i % 50} "}))
        if i % 512 == 511:
            while ws.sent < i - 256:
                await asyncio.sleep(0)
    while ws.sent < n:
        await asyncio.sleep(0)
    elapsed = time.perf_counter() - started
    writer.cancel()
    await asyncio.gather(writer, return_exceptions=True)
    return n / elapsed


def raw_loads_rate(items: list[str]) -> float:
    started = time.perf_counter()
    for text in items:
        json.loads(text)
    return len(items) / (time.perf_counter() - started)


def raw_dumps_rate(n: int) -> float:
    params = [
        {"type": "message.delta", "session_id": "r1", "payload": {"text": f"tok{i % 50} "}}
        for i in range(n)
    ]
    started = time.perf_counter()
    for i, p in enumerate(params):
        json.dumps(
            {"jsonrpc": "2.0", "method": "event", "params": {**p, "seq": i}},
            ensure_ascii=False,
            separators=(",", ":"),
        )
    return n / (time.perf_counter() - started)


def best_of(runs: int, fn: Callable[[], float]) -> float:
    return max(fn() for _ in range(runs))


def main() -> int:
    items = frames(EVENTS)
    client = best_of(3, lambda: asyncio.run(client_rate(items)))
    loads = best_of(3, lambda: raw_loads_rate(items))
    gateway = best_of(3, lambda: asyncio.run(gateway_rate(EVENTS)))
    dumps = best_of(3, lambda: raw_dumps_rate(EVENTS))
    rows = [
        Result(
            BENCH,
            "client decode + dispatch",
            f">= {TARGET:,} events/s",
            client,
            "events/s",
            loads,
            "raw json.loads of the same frames",
            client >= TARGET,
            f"part: the client (JsonRpcGatewayClient) alone; {EVENTS:,} message.delta frames, "
            "in-memory transport, best of 3",
        ),
        Result(
            BENCH,
            "gateway event send path",
            f">= {TARGET:,} events/s",
            gateway,
            "events/s",
            dumps,
            "raw json.dumps of the same frames",
            gateway >= TARGET,
            "part: the gateway's send path alone; EventLog.append -> Connection.send_event -> "
            "writer task, null socket",
        ),
    ]
    for row, name, fn in (
        (rows[0], "throughput-client", lambda: asyncio.run(client_rate(items))),
        (rows[1], "throughput-gateway", lambda: asyncio.run(gateway_rate(EVENTS))),
    ):
        if not row.met:
            path = profile_to_file(name, fn)
            rows[rows.index(row)] = Result(
                **{**row.to_json(), "note": f"{row.note}; profile {path.name}"}
            )
    emit(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
