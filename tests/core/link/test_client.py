"""JsonRpcGatewayClient over the in-memory transport: calls, events, generations, liveness."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from desktop.common.clock import ManualClock
from desktop.core.errors import (
    AuthError,
    CallTimeoutError,
    ConnectError,
    ConnectionLostError,
    InsecureTransportError,
    NotConnectedError,
    ProtocolError,
    RpcError,
)
from desktop.core.link.client import ClientState, JsonRpcGatewayClient
from desktop.core.link.protocol import Event
from tests.core.fakes import LEGACY_READY, FakeGateway, RpcFailure, settle

URL = "ws://127.0.0.1:9/api/ws"


def make_client(gw: FakeGateway, clock: ManualClock, **kwargs: Any) -> JsonRpcGatewayClient:
    return JsonRpcGatewayClient(
        URL, token="secret", clock=clock, transport_factory=gw.factory, **kwargs
    )


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[Event, int]] = []
        self.closed: list[tuple[str, int | None, int]] = []

    def on_event(self, event: Event, generation: int) -> None:
        self.events.append((event, generation))

    def on_closed(self, reason: str, code: int | None, generation: int) -> None:
        self.closed.append((reason, code, generation))

    def types(self) -> list[str]:
        return [e.type for e, _ in self.events]


async def open_client(
    gw: FakeGateway | None = None, clock: ManualClock | None = None, **kwargs: Any
) -> tuple[JsonRpcGatewayClient, FakeGateway, ManualClock, Recorder]:
    gw = gw or FakeGateway()
    clock = clock or ManualClock()
    client = make_client(gw, clock, **kwargs)
    rec = Recorder()
    client.subscribe(rec.on_event)
    client.on_closed(rec.on_closed)
    await client.connect()
    return client, gw, clock, rec


async def advance_until_closed(
    client: JsonRpcGatewayClient, clock: ManualClock, limit: float
) -> float | None:
    """Step time 0.25 s at a time; return when the client noticed the death (clock time)."""
    elapsed = 0.0
    while elapsed < limit:
        clock.advance(0.25)
        elapsed += 0.25
        await settle()
        if client.state is not ClientState.OPEN:
            return clock.monotonic()
    return None


async def test_connect_returns_capabilities_and_forwards_ready() -> None:
    client, gw, _, rec = await open_client()
    try:
        assert client.state is ClientState.OPEN
        assert client.generation == 1
        assert client.dialect is not None and client.dialect.heartbeat
        assert rec.types() == ["gateway.ready"] and rec.events[0][1] == 1
        # The token travels to the transport, never in the logged URL.
        assert gw.connect_kwargs[0]["token"] == "secret"
        assert "secret" not in client.url
    finally:
        await client.close()


async def test_call_sends_one_request_and_returns_its_result() -> None:
    gw = FakeGateway()
    gw.handlers["session.create"] = lambda params: {"session_id": "r1", "title": params["title"]}
    client, _, _, _ = await open_client(gw)
    try:
        result = await client.call("session.create", {"title": "Plan"})
        assert result == {"session_id": "r1", "title": "Plan"}
        (req,) = gw.peer.requests("session.create")
        assert req["jsonrpc"] == "2.0" and req["params"] == {"title": "Plan"}
    finally:
        await client.close()


async def test_error_reply_raises_typed_rpc_error() -> None:
    gw = FakeGateway()

    def busy(params: dict[str, Any]) -> Any:
        raise RpcFailure(4009, "session busy", {"session_id": params["session_id"]})

    gw.handlers["prompt.submit"] = busy
    client, _, _, _ = await open_client(gw)
    try:
        with pytest.raises(RpcError) as info:
            await client.call("prompt.submit", {"session_id": "r1", "text": "hi"})
        err = info.value
        assert (err.code, err.message, err.method) == (4009, "session busy", "prompt.submit")
        assert err.data == {"session_id": "r1"}
        assert not err.is_retryable()
        assert client.state is ClientState.OPEN
    finally:
        await client.close()


async def test_call_times_out_by_the_clock_and_a_late_reply_is_ignored() -> None:
    client, gw, clock, _ = await open_client(call_timeout=30.0)
    try:
        call = _task(client.call("session.history", {"session_id": "r1"}))
        req = await gw.peer.next_request("session.history")
        clock.advance(29.0)
        await settle()
        assert not call.done()
        clock.advance(1.0)
        with pytest.raises(CallTimeoutError):
            await call
        gw.peer.reply(req["id"], {"count": 0})
        await settle()
        assert client.stats.duplicate_replies == 1
        assert client.stats.unknown_reply_ids == 0
        assert client.state is ClientState.OPEN  # a slow method is not a dead socket
    finally:
        await client.close()


async def test_per_call_timeout_overrides_the_default() -> None:
    client, gw, clock, _ = await open_client(call_timeout=30.0)
    try:
        call = _task(client.call("session.list", timeout=2.0))
        await gw.peer.next_request("session.list")
        clock.advance(2.0)
        with pytest.raises(CallTimeoutError):
            await call
    finally:
        await client.close()


async def test_events_reach_subscribers_until_they_unsubscribe() -> None:
    client, gw, _, rec = await open_client()
    try:
        seen: list[str] = []

        def boom(event: Event, generation: int) -> None:
            raise RuntimeError("listener bug")

        client.subscribe(boom)
        unsubscribe = client.subscribe(lambda e, g: seen.append(e.payload.get("text", "")))
        gw.peer.push_event("message.delta", {"text": "he"}, session_id="r1", seq=1)
        gw.peer.push_event("message.delta", {"text": "llo"}, session_id="r1", seq=2)
        await settle()
        unsubscribe()
        gw.peer.push_event("message.complete", {"text": "hello"}, session_id="r1", seq=3)
        await settle()
        assert seen == ["he", "llo"]
        # A raising listener is counted, and neither it nor the others stop the stream.
        assert rec.types() == [
            "gateway.ready",
            "message.delta",
            "message.delta",
            "message.complete",
        ]
        assert client.stats.listener_errors == 3
        assert rec.events[-1][0].seq == 3
    finally:
        await client.close()


async def test_invalidate_rejects_every_pending_call_at_once() -> None:
    client, gw, _, rec = await open_client()
    calls = [_task(client.call("session.activate", {"session_id": f"r{i}"})) for i in range(3)]
    await gw.peer.next_request("session.activate", after=2)
    client.invalidate("network changed")
    # Synchronously: the futures are already resolved before the loop runs again.
    assert client.state is ClientState.CLOSED
    assert rec.closed == [("network changed", None, 1)]
    for call in calls:
        with pytest.raises(ConnectionLostError) as info:
            await call
        assert info.value.generation == 1 and info.value.is_retryable()
    await gw.peer.closed.wait()
    assert gw.peer.closed_by_client
    client.invalidate("again")  # idempotent: no second death report
    assert len(rec.closed) == 1
    with pytest.raises(NotConnectedError):
        await client.call("session.list")
    await client.close()


async def test_new_generation_fences_off_the_old_socket() -> None:
    client, gw, _, rec = await open_client()
    try:
        old = gw.peer
        await client.connect()
        assert client.generation == 2 and len(gw.peers) == 2
        assert rec.closed == [("replaced by a new connection", None, 1)]
        old.push_event("message.delta", {"text": "stale"}, session_id="r1")
        old.close(1011, "late close")
        await settle()
        assert all(e.payload.get("text") != "stale" for e, _ in rec.events)
        assert [g for _, g in rec.events] == [1, 2]  # two ready events, one per generation
        assert client.state is ClientState.OPEN and len(rec.closed) == 1
        gw.peer.push_event("notice", {"text": "fresh"})
        await settle()
        assert rec.events[-1][0].type == "notice" and rec.events[-1][1] == 2
    finally:
        await client.close()


async def test_server_close_reports_code_and_rejects_pending() -> None:
    client, gw, _, rec = await open_client()
    call = _task(client.call("session.history", {"session_id": "r1"}))
    await gw.peer.next_request("session.history")
    gw.peer.close(1012, "service restart")
    with pytest.raises(ConnectionLostError):
        await call
    assert rec.closed == [("service restart", 1012, 1)]
    assert client.state is ClientState.CLOSED
    await client.close()


async def test_auth_close_before_ready_is_a_fatal_auth_error() -> None:
    gw = FakeGateway(auto_ready=False)
    client = make_client(gw, ManualClock())
    attempt = _task(client.connect())
    await settle()
    gw.peer.close(4403, "forbidden")
    with pytest.raises(AuthError) as info:
        await attempt
    assert not info.value.is_retryable()
    await client.close()


async def test_connect_times_out_without_ready() -> None:
    gw = FakeGateway(auto_ready=False)
    clock = ManualClock()
    client = make_client(gw, clock, connect_timeout=10.0)
    attempt = _task(client.connect())
    await settle()
    clock.advance(9.5)
    await settle()
    assert not attempt.done()
    clock.advance(0.5)
    with pytest.raises(ConnectError) as info:
        await attempt
    assert info.value.is_retryable()
    assert client.state is ClientState.CLOSED
    await gw.peer.closed.wait()  # the half-open socket was not left behind
    await client.close()


async def test_factory_errors_pass_through_typed() -> None:
    gw = FakeGateway()
    gw.connect_errors.append(AuthError("gateway refused the token (HTTP 403)", status=403))
    client = make_client(gw, ManualClock())
    with pytest.raises(AuthError):
        await client.connect()
    assert client.state is ClientState.CLOSED
    await client.connect()  # an auth error is the supervisor's call, not a wedged client
    assert client.generation == 2 and client.state is ClientState.OPEN
    await client.close()


async def test_unknown_protocol_version_fails_connect() -> None:
    gw = FakeGateway(ready={"heartbeat": True, "protocol": {"version": 2}})
    client = make_client(gw, ManualClock())
    with pytest.raises(ProtocolError):
        await client.connect()
    await gw.peer.closed.wait()
    await client.close()


async def test_token_over_plain_ws_to_a_remote_host_is_refused() -> None:
    gw = FakeGateway()
    client = JsonRpcGatewayClient(
        "ws://gateway.example.com/api/ws", token="t", transport_factory=gw.factory
    )
    with pytest.raises(InsecureTransportError):
        await client.connect()
    assert gw.connect_kwargs == []  # nothing was even dialled
    allowed = JsonRpcGatewayClient(
        "ws://gateway.example.com/api/ws",
        token="t",
        transport_factory=gw.factory,
        allow_insecure=True,
        clock=ManualClock(),
    )
    await allowed.connect()
    await allowed.close()


async def test_close_is_idempotent_and_final() -> None:
    client, gw, _, rec = await open_client()
    call = _task(client.call("session.list"))
    await gw.peer.next_request("session.list")
    await client.close()
    await client.close()
    with pytest.raises(ConnectionLostError):
        await call
    assert rec.closed == [("closed by client", 1000, 1)]
    with pytest.raises(ConnectError) as info:
        await client.connect()
    assert not info.value.is_retryable()
    assert len(gw.peers) == 1


async def test_app_heartbeat_pings_at_interval_with_capability() -> None:
    client, gw, clock, _ = await open_client(heartbeat_interval=15.0)
    try:
        clock.advance(14.0)
        await settle()
        assert gw.peer.requests("gateway.ping") == []
        for _ in range(4):
            clock.advance(15.0 if _ else 1.0)
            await settle()
        assert len(gw.peer.requests("gateway.ping")) == 4
        assert gw.peer.pings_received == 0  # no protocol pings where the app heartbeat exists
        assert len(client.heartbeat_rtts) == 4
        # Answered pings keep the socket alive well past the deadline.
        assert await advance_until_closed(client, clock, 200.0) is None
    finally:
        await client.close()


async def test_legacy_gateway_gets_protocol_pings_and_never_gateway_ping() -> None:
    client, gw, clock, _ = await open_client(FakeGateway(ready=LEGACY_READY))
    try:
        assert client.dialect is not None and not client.dialect.heartbeat
        assert await advance_until_closed(client, clock, 120.0) is None
        assert gw.peer.requests("gateway.ping") == []
        assert gw.peer.pings_received == 8  # one per 15 s
        assert len(client.heartbeat_rtts) == 8
    finally:
        await client.close()


@pytest.mark.parametrize("ready", [None, LEGACY_READY], ids=["current", "legacy"])
async def test_silent_drop_detected_at_the_deadline(ready: dict[str, Any] | None) -> None:
    client, gw, clock, rec = await open_client(
        FakeGateway(ready=ready), heartbeat_interval=15.0, heartbeat_deadline=45.0
    )
    gw.peer.push_event("notice", {"text": "x"})
    await settle()
    clock.advance(10.0)  # inbound at +10 moves the deadline lazily
    gw.peer.push_event("notice", {"text": "y"})
    await settle()
    last = client.last_inbound_at
    assert last == clock.monotonic()
    gw.peer.blackhole()
    # Half-open: the request vanishes, so only the deadline can end this call.
    stuck = _task(client.call("prompt.submit", {"session_id": "r1", "text": "hi"}, timeout=90))
    detected = await advance_until_closed(client, clock, 120.0)
    assert detected is not None
    assert 45.0 <= detected - last <= 46.0
    assert rec.closed == [("heartbeat deadline passed", None, 1)]
    assert stuck.done()
    with pytest.raises(ConnectionLostError):
        stuck.result()
    await client.close()


async def test_slow_but_alive_link_is_not_declared_dead() -> None:
    # The gateway never answers pings, but a frame trickles in every 40 s (< 45 s deadline).
    client, gw, clock, rec = await open_client(FakeGateway(answers_pings=False))
    try:
        for _ in range(5):
            clock.advance(40.0)
            gw.peer.push_event("status.update", {"text": "working"})
            await settle()
        assert client.state is ClientState.OPEN and rec.closed == []
    finally:
        await client.close()


async def test_a_large_frame_still_arriving_is_not_a_dead_link() -> None:
    # A big snapshot at 1 KB/s: bytes keep coming for longer than the deadline, no whole frame.
    client, gw, clock, rec = await open_client(FakeGateway(answers_pings=False))
    transport = gw.peer.transport
    try:
        for _ in range(4):
            transport.trickle(30_000)
            clock.advance(44.0)
            await settle()
        assert client.state is ClientState.OPEN and rec.closed == []
        # The bytes stop: the link is dead one deadline later, not never.
        last_bytes = clock.monotonic()
        detected = await advance_until_closed(client, clock, 200.0)
        assert detected is not None and detected - last_bytes <= 2 * 45.0 + 1.0
        assert rec.closed == [("heartbeat deadline passed", None, 1)]
    finally:
        await client.close()


async def test_bad_input_is_counted_and_survived() -> None:
    gw = FakeGateway()
    gw.handlers["session.list"] = lambda params: {"sessions": []}
    client, _, _, rec = await open_client(gw)
    try:
        peer = gw.peer
        peer.push("{not json")
        peer.push('{"jsonrpc":"2.0","id":1}')
        peer.push(b"\x00\x01binary")
        peer.push({"jsonrpc": "2.0", "id": 99999, "result": {}})
        peer.push({"jsonrpc": "2.0", "method": "event", "params": {"payload": {}}})
        await settle()
        assert await client.call("session.list") == {"sessions": []}
        (req,) = peer.requests("session.list")
        peer.reply(req["id"], {"sessions": ["dup"]})  # duplicate reply
        await settle()
        stats = client.stats
        assert (stats.malformed_frames, stats.binary_frames) == (3, 1)
        assert (stats.unknown_reply_ids, stats.duplicate_replies) == (1, 1)
        assert client.state is ClientState.OPEN and rec.closed == []
    finally:
        await client.close()


async def test_oversized_frame_is_dropped_and_counted() -> None:
    client, gw, _, rec = await open_client(max_frame_size=1024)
    try:
        gw.peer.push_event("message.delta", {"text": "x" * 2000})
        gw.peer.push_event("message.delta", {"text": "small"})
        await settle()
        assert client.stats.oversized_frames == 1
        assert [e.payload["text"] for e, _ in rec.events[1:]] == ["small"]
        assert client.state is ClientState.OPEN
    finally:
        await client.close()


async def test_library_refusing_a_big_frame_is_a_close() -> None:
    client, gw, _, rec = await open_client()
    gw.peer.close(1009, "frame too big")
    await settle()
    assert client.stats.oversized_frames == 1
    assert rec.closed == [("frame too big", 1009, 1)]
    await client.close()


async def test_listener_may_invalidate_from_inside_the_reader() -> None:
    client, gw, _, rec = await open_client()
    client.subscribe(lambda e, g: client.invalidate("bad event") if e.type == "error" else None)
    gw.peer.push_event("error", {"message": "boom"})
    gw.peer.push_event("notice", {"text": "after"})
    await settle()
    assert rec.closed == [("bad event", None, 1)]
    assert rec.types() == ["gateway.ready", "error"]  # nothing read after the death
    await gw.peer.closed.wait()
    await client.close()


async def test_cancelled_connect_leaves_no_socket_behind() -> None:
    gw = FakeGateway(auto_ready=False)
    client = make_client(gw, ManualClock())
    attempt = _task(client.connect())
    await settle()
    attempt.cancel()
    with pytest.raises(asyncio.CancelledError):
        await attempt
    assert client.state is ClientState.CLOSED
    await gw.peer.closed.wait()
    await client.close()


async def test_call_before_connect_sends_nothing() -> None:
    gw = FakeGateway()
    client = make_client(gw, ManualClock())
    with pytest.raises(NotConnectedError):
        await client.call("session.list")
    assert client.state is ClientState.IDLE and gw.peers == []
    await client.close()


def _task(coro: Any) -> asyncio.Task[Any]:
    return asyncio.get_running_loop().create_task(coro)


async def test_subscribing_during_dispatch_takes_effect_from_the_next_event() -> None:
    client, gw, _, rec = await open_client()
    try:
        late: list[str] = []
        twice: list[str] = []

        def late_listener(event: Event, generation: int) -> None:
            late.append(event.type)

        def subscribe_once(event: Event, generation: int) -> None:
            client.subscribe(late_listener)
            unsubscribe_self()

        def count(event: Event, generation: int) -> None:
            twice.append(event.type)

        unsubscribe_self = client.subscribe(subscribe_once)
        client.subscribe(count)
        unsubscribe_second = client.subscribe(count)
        gw.peer.push_event("message.start", {}, session_id="r1", seq=1)
        await settle()
        unsubscribe_second()
        unsubscribe_second()  # a second call removes nothing more
        unsubscribe_self()
        gw.peer.push_event("message.delta", {"text": "x"}, session_id="r1", seq=2)
        await settle()
        assert late == ["message.delta"]  # added mid-dispatch: not called for that event
        assert twice == ["message.start", "message.start", "message.delta"]
        assert rec.types()[-2:] == ["message.start", "message.delta"]
    finally:
        await client.close()


async def test_a_teardown_that_raises_still_reports_the_link_closed() -> None:
    """An oversized frame closed the socket and its transport's abort() raises (connection_lost
    already ran): the client must still say the link closed, or the supervisor stays ONLINE on
    a dead socket with no heartbeat."""
    client, gw, _clock, rec = await open_client()

    def broken_abort() -> None:
        raise AttributeError("'NoneType' object has no attribute 'abort'")

    gw.peer.transport.abort = broken_abort  # type: ignore[attr-defined]
    client.invalidate("frame too large", code=1009)
    await settle()
    assert [(reason, code) for reason, code, _ in rec.closed] == [("frame too large", 1009)]
    assert client.state is ClientState.CLOSED
    await client.close()


async def test_every_socket_asks_for_server_requests_and_a_request_reaches_listeners() -> None:
    gw = FakeGateway()
    gw.handlers["client.capabilities"] = lambda params: {"server_requests": ["approval", "clarify"]}
    client, gw, _, rec = await open_client(gw)
    try:
        # Asked before connect() returned: before any session is reactivated on this socket.
        [asked] = gw.peer.requests("client.capabilities")
        assert asked["params"] == {"server_requests": True}
        assert client.dialect is not None
        assert client.dialect.server_requests == {"approval", "clarify"}
        gw.peer.push(
            {
                "jsonrpc": "2.0",
                "id": "srq-1",
                "method": "approval",
                "params": {"session_id": "s1", "request_id": "r1", "command": "rm -rf /x"},
            }
        )
        await settle()
        [(event, _)] = [(e, g) for e, g in rec.events if e.type == "server.request"]
        assert event.session_id == "s1" and event.payload["id"] == "srq-1"
        assert client.stats.malformed_frames == 0
        await client.reply("srq-1", {"choice": "once"})
        await settle()
        assert gw.peer.received[-1] == {
            "jsonrpc": "2.0",
            "id": "srq-1",
            "result": {"choice": "once"},
        }
        # The next socket asks again (the capability is per connection).
        await client.connect()
        assert len(gw.peer.requests("client.capabilities")) == 1 and len(gw.peers) == 2
    finally:
        await client.close()


async def test_a_gateway_without_server_requests_is_learned_as_missing() -> None:
    client, _, _, _ = await open_client()
    try:
        assert client.state is ClientState.OPEN
        assert client.dialect is not None and client.dialect.server_requests == frozenset()
        assert not client.dialect.has("client.capabilities")
    finally:
        await client.close()
    with pytest.raises(NotConnectedError):
        await client.reply("srq-1", {"choice": "deny"})


async def test_a_frame_that_breaks_the_handler_fails_the_link_instead_of_freezing() -> None:
    """Whatever goes wrong handling one frame, the link is failed (and the supervisor
    reconnects and re-syncs): the reader never just stops with the link looking alive."""
    client, gw, _clock, rec = await open_client()

    def broken(*_args: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    client._on_decoded = broken  # type: ignore[method-assign]
    gw.peer.push({"jsonrpc": "2.0", "id": 999, "result": {}})
    await settle()
    assert [reason for reason, _, _ in rec.closed] == [
        "a frame could not be handled (RecursionError)"
    ]
    await client.close()


async def test_a_gateway_request_of_a_kind_the_app_does_not_answer_is_refused_at_once() -> None:
    """Hermes 0.22 also asks `tour`, `preview.act`, `theme.pick`, ... once a socket said it
    takes server requests: refused there and then (-32601), so the agent goes on instead of
    waiting 10-45 s for its own timeout; nothing reaches the chat."""
    gw = FakeGateway()
    gw.handlers["client.capabilities"] = lambda params: {"server_requests": ["approval", "tour"]}
    client, gw, _, rec = await open_client(gw)
    try:
        gw.peer.push(
            {"jsonrpc": "2.0", "id": "srq-9", "method": "tour", "params": {"session_id": "s1"}}
        )
        await settle()
        assert gw.peer.received[-1] == {
            "jsonrpc": "2.0",
            "id": "srq-9",
            "error": {"code": -32601, "message": "tour: not supported by this client"},
        }
        assert [e for e, _ in rec.events if e.type == "server.request"] == []
    finally:
        await client.close()


async def test_the_reader_holds_no_frame_while_it_waits_for_the_next() -> None:
    """The reader kept the last frame it handled while waiting for the next: a session list
    of 10,000 chats stayed in memory after it was merged (5 MB) until another frame came."""
    gw = FakeGateway()
    gw.handlers["session.list"] = lambda params: {"sessions": [{"id": f"s{i}"} for i in range(50)]}
    client, _, _, _ = await open_client(gw)
    try:
        await client.call("session.list", {})
        await settle()  # the reader waits for the next frame
        (reader,) = [
            t for t in asyncio.all_tasks() if t.get_coro().__qualname__.endswith("_read_loop")
        ]
        frame = reader.get_coro().cr_frame
        assert frame is not None
        held = [
            name
            for name, value in frame.f_locals.items()
            if isinstance(value, str | bytes) or type(value).__name__ in ("Reply", "Event")
        ]
        assert held == [], f"the reader still holds {held}"
    finally:
        await client.close()
