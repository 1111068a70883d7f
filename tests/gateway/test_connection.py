"""A socket's send path: events encoded once, sent in order, a client that lags is cut off."""

from __future__ import annotations

import asyncio
import json
import weakref
from typing import Any

import pytest

from desktop.common.clock import ManualClock
from desktop.core.link.protocol import Event, decode_frame
from desktop.gateway.rpc import connection
from desktop.gateway.rpc.connection import Connection
from desktop.gateway.sessions.events import EventLog


class _Transport:
    def __init__(self) -> None:
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True


class _Socket:
    """The parts of a websockets ServerConnection the writer uses; send can be held."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.transport = _Transport()
        self.gate: asyncio.Event | None = None
        self.arrived = asyncio.Event()
        self.incoming: asyncio.Queue[str | None] = asyncio.Queue()  # None: the client left

    def __aiter__(self) -> _Socket:
        return self

    async def __anext__(self) -> str:
        message = await self.incoming.get()
        if message is None:
            raise StopAsyncIteration
        return message

    async def send(self, data: str | bytes, text: bool | None = None) -> None:
        if self.gate is not None:
            await self.gate.wait()
        assert text is True  # always a text frame
        self.sent.append(data.decode() if isinstance(data, bytes) else data)
        self.arrived.set()


class _Methods:
    """Answers every request with {"ok": True}, as gateway.ping does."""

    def call(self, _peer: Connection, _method: str, _params: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True}


class _Hub:
    def __init__(self) -> None:
        self.detached: list[Connection] = []

    def detach(self, conn: Connection) -> None:
        self.detached.append(conn)


async def _until_sent(ws: _Socket, count: int) -> None:
    while len(ws.sent) < count:
        ws.arrived.clear()
        await ws.arrived.wait()


async def _serving(conn: Connection, ws: _Socket, body: Any) -> None:
    """Serve the socket as the gateway does while `body` runs; then the client leaves."""
    server = asyncio.get_running_loop().create_task(conn.serve({"heartbeat": True}))
    await asyncio.sleep(0)  # the server greets with gateway.ready before anything else
    try:
        await body
    finally:
        ws.incoming.put_nowait(None)
        await server


def _connection(**kwargs: Any) -> tuple[Connection, _Socket, _Hub]:
    ws, hub = _Socket(), _Hub()
    conn = Connection(ws, hub, _Methods(), ManualClock(), **kwargs)  # type: ignore[arg-type]
    return conn, ws, hub


def test_logged_event_frame_is_the_event_as_the_client_reads_it() -> None:
    log = EventLog()
    first = log.append("r1", "message.delta", {"text": 'héllo "quoted" 🌍'})
    second = log.append("r1", "message.complete", {"text": "done", "usage": {}})
    decoded = decode_frame(second.frame)
    assert decoded == Event("message.complete", "r1", {"text": "done", "usage": {}}, 2, decoded.raw)  # type: ignore[union-attr]
    assert json.loads(first.frame) == {
        "jsonrpc": "2.0",
        "method": "event",
        "params": {
            "type": "message.delta",
            "session_id": "r1",
            "payload": first["payload"],
            "seq": 1,
        },
    }
    # The replay buffer hands back the very events that were sent, frames included.
    events, complete = log.since(0)
    assert events == [first, second] and complete
    assert [e.frame for e in events] == [first.frame, second.frame]  # type: ignore[attr-defined]


def test_payload_json_cannot_hold_uses_up_no_seq() -> None:
    log = EventLog()
    log.append("r1", "notice", {"message": "a"})
    with pytest.raises(TypeError):
        log.append("r1", "notice", {"message": object()})
    assert log.append("r1", "notice", {"message": "b"})["seq"] == 2
    assert log.last_seq == 2 and [e["seq"] for e in log.since(0)[0]] == [1, 2]


async def test_events_and_replies_go_out_once_each_in_order() -> None:
    conn, ws, _ = _connection()
    log = EventLog()

    async def body() -> None:
        for i in range(5):
            conn.send_event(log.append("r1", "message.delta", {"text": f"t{i}"}))
        ws.incoming.put_nowait('{"jsonrpc": "2.0", "id": 7, "method": "gateway.ping"}')
        await _until_sent(ws, 7)
        conn.send_event({"type": "notice", "payload": {"text": "after the reply"}})
        await _until_sent(ws, 8)

    await _serving(conn, ws, body())
    ready = decode_frame(ws.sent[0])
    assert isinstance(ready, Event) and ready.type == "gateway.ready"
    assert ready.payload == {"heartbeat": True}
    assert ws.sent[1:6] == [e.frame for e in log.since(0)[0]]  # type: ignore[attr-defined]
    assert json.loads(ws.sent[6]) == {"jsonrpc": "2.0", "id": 7, "result": {"ok": True}}
    notice = decode_frame(ws.sent[7])
    assert isinstance(notice, Event) and notice.payload == {"text": "after the reply"}
    assert len(ws.sent) == 8 and not conn.dropped_slow


async def test_client_that_stops_reading_is_cut_off_at_the_queue_limit() -> None:
    conn, ws, hub = _connection(queue_limit=4)
    ws.gate = asyncio.Event()  # the socket accepts nothing: the writer holds one frame
    log = EventLog()

    async def body() -> None:
        await asyncio.sleep(0)  # the writer takes gateway.ready and blocks in send
        for i in range(4):
            conn.send_event(log.append("r1", "message.delta", {"text": f"q{i}"}))
        assert conn.open
        conn.send_event(log.append("r1", "message.delta", {"text": "one too many"}))

    await _serving(conn, ws, body())
    assert conn.dropped_slow and not conn.open
    assert ws.transport.aborted and hub.detached == [conn]
    conn.send_event(log.append("r1", "message.delta", {"text": "after"}))  # ignored, no error
    assert ws.sent == []


async def test_byte_budget_drops_a_client_that_lags_behind_big_frames() -> None:
    conn, ws, _ = _connection(queue_bytes=1000)
    ws.gate = asyncio.Event()
    log = EventLog()
    conn.send_event(log.append("r1", "message.delta", {"text": "x" * 600}))
    conn.send_event(log.append("r1", "message.delta", {"text": "y" * 600}))
    assert conn.dropped_slow and ws.transport.aborted


class _Rows(list[dict[str, Any]]):
    """A reply's rows, watched: a list that a weak reference can follow."""


class _BigList:
    """Answers session.list with thousands of rows (a long history), as the gateway does."""

    def __init__(self) -> None:
        self.rows: weakref.ref[_Rows] | None = None

    def call(self, _peer: Connection, _method: str, _params: dict[str, Any]) -> dict[str, Any]:
        rows = _Rows(
            {"id": f"s{i}", "title": f"chat {i}", "preview": "x" * 40} for i in range(5000)
        )
        self.rows = weakref.ref(rows)
        return {"sessions": rows}


async def test_a_big_reply_once_sent_is_freed_and_its_heap_given_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 10,000 chats listed left the gateway 16 MB bigger for good: the reply was kept until
    # the next request and the heap it freed was never handed back.
    released: list[bool] = []  # at each release: whether the reply's rows were gone by then
    methods = _BigList()

    def release(*, collect: bool = False) -> bool:
        released.append(collect and methods.rows is not None and methods.rows() is None)
        return True

    monkeypatch.setattr(connection, "release_freed_memory", release)
    ws = _Socket()
    conn = Connection(ws, _Hub(), methods, ManualClock())  # type: ignore[arg-type]

    async def body() -> None:
        ws.incoming.put_nowait('{"jsonrpc": "2.0", "id": 1, "method": "session.list"}')
        await _until_sent(ws, 2)
        await asyncio.sleep(0)  # the writer goes on past the send

    await _serving(conn, ws, body())
    assert len(json.loads(ws.sent[1])["result"]["sessions"]) == 5000
    assert released == [True]


async def test_small_replies_cost_no_release(monkeypatch: pytest.MonkeyPatch) -> None:
    released: list[int] = []
    monkeypatch.setattr(connection, "release_freed_memory", lambda **_: released.append(1))
    conn, ws, _ = _connection()

    async def body() -> None:
        for i in range(20):
            ws.incoming.put_nowait(f'{{"jsonrpc": "2.0", "id": {i}, "method": "gateway.ping"}}')
        await _until_sent(ws, 21)

    await _serving(conn, ws, body())
    assert released == []
