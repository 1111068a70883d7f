"""In-memory gateway doubles: a Transport pair a test drives, and a factory for the client.

gw = FakeGateway()                       # answers gateway.ready + gateway.ping by itself
gw.handlers["session.create"] = lambda params: {"session_id": "r1"}
client = JsonRpcGatewayClient("ws://127.0.0.1:1/api/ws", transport_factory=gw.factory,
                              clock=ManualClock())
await client.connect()
peer = gw.peer                           # the server side of the newest socket
peer.push_event("message.delta", {"text": "hi"}, session_id="r1")
peer.close(4403)  /  peer.blackhole()  /  await peer.next_request("prompt.submit")
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

from desktop.common.clock import Clock
from desktop.core.errors import GatewayError, TransportClosedError
from desktop.core.link.protocol import encode_event, encode_reply

Handler = Callable[[dict[str, Any]], Any]

CURRENT_READY: dict[str, Any] = {
    "heartbeat": True,
    "protocol": {"version": 1},
    "capabilities": {"event_replay": True, "client_turn_id": True},
    "replay_epoch": "epoch-1",
}
# hermes-agent 0.19.0: no heartbeat, no protocol block.
LEGACY_READY: dict[str, Any] = {}
# A WebSocket pong to a 4-byte ping, as it comes off the wire (server frames are unmasked).
PONG_BYTES = 6


class _Closed:
    __slots__ = ("code", "reason")

    def __init__(self, code: int | None, reason: str) -> None:
        self.code = code
        self.reason = reason


async def settle(rounds: int = 50) -> None:
    """Yield to the loop until nothing is left to run (bounded; never waits on wall time)."""
    loop = asyncio.get_running_loop()
    quiet = 0
    for _ in range(rounds):
        await asyncio.sleep(0)
        ready = getattr(loop, "_ready", None)
        quiet = quiet + 1 if ready is not None and len(ready) == 0 else 0
        if quiet >= 3:
            return


class RpcFailure(Exception):
    """Raise from a handler to answer with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class MemoryTransport:
    """The client half of an in-memory socket; its server half is a FakeGatewayPeer."""

    def __init__(self, peer: FakeGatewayPeer) -> None:
        self._peer = peer
        self._incoming: asyncio.Queue[str | bytes | _Closed] = asyncio.Queue()
        self._closed: _Closed | None = None
        self._pings: list[asyncio.Future[float]] = []
        self.close_calls = 0
        # Raw bytes "received": whole frames, plus partial ones a test trickles in.
        self.bytes_received = 0

    @property
    def local_open(self) -> bool:
        return self._closed is None

    def trickle(self, nbytes: int) -> None:
        """Part of a large frame arrived: bytes, but no whole frame yet."""
        self.bytes_received += nbytes

    async def send(self, text: str) -> None:
        if self._closed is not None:
            raise TransportClosedError(self._closed.reason, code=self._closed.code)
        await asyncio.sleep(0)  # a real send yields too
        if self._closed is not None:
            raise TransportClosedError(self._closed.reason, code=self._closed.code)
        self._peer._receive(text)

    async def recv(self) -> str | bytes:
        if self._closed is not None and self._incoming.empty():
            raise TransportClosedError(self._closed.reason, code=self._closed.code)
        item = await self._incoming.get()
        if isinstance(item, _Closed):
            self._incoming.put_nowait(item)  # later receives see the close too
            raise TransportClosedError(item.reason, code=item.code)
        return item

    async def ping(self) -> float:
        if self._closed is not None:
            raise TransportClosedError(self._closed.reason, code=self._closed.code)
        self._peer.pings_received += 1
        gateway = self._peer.gateway
        if self._peer.answers_pings and not self._peer.blackholed:
            if gateway.pong_clock is None:
                await asyncio.sleep(0)
            else:
                await gateway.pong_clock.sleep(gateway.pong_delay)
        if self._peer.answers_pings and not self._peer.blackholed and self._closed is None:
            self.bytes_received += PONG_BYTES
            return self._peer.ping_rtt
        fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._pings.append(fut)
        try:
            return await fut
        finally:
            self._pings.remove(fut)

    async def close(self) -> None:
        self.close_calls += 1
        self._shut(1000, "closed by client", from_client=True)
        await asyncio.sleep(0)

    def _deliver(self, frame: str | bytes) -> None:
        if self._closed is None:
            self.bytes_received += len(frame)
            self._incoming.put_nowait(frame)

    def _shut(self, code: int | None, reason: str, *, from_client: bool) -> None:
        if self._closed is not None:
            return
        self._closed = _Closed(code, reason)
        self._incoming.put_nowait(self._closed)
        for fut in self._pings:
            if not fut.done():
                fut.set_exception(TransportClosedError(reason, code=code))
        self._peer._on_transport_closed(from_client)


class FakeGatewayPeer:
    """The server side of one MemoryTransport, driven by the test."""

    def __init__(self, gateway: FakeGateway, index: int) -> None:
        self.gateway = gateway
        self.index = index
        self.transport = MemoryTransport(self)
        self.received: list[dict[str, Any]] = []
        self.pings_received = 0
        self.answers_pings = gateway.answers_pings
        self.ping_rtt = 0.001
        self.blackholed = False
        self.closed_by_client = False
        self.closed = asyncio.Event()
        self._arrival = asyncio.Event()

    # --- frames to the client ---
    def push(self, frame: str | bytes | Mapping[str, Any]) -> None:
        """Deliver one raw frame (dicts are JSON-encoded); lost when blackholed."""
        if self.blackholed:
            return
        if isinstance(frame, Mapping):
            frame = json.dumps(frame)
        self.transport._deliver(frame)

    def push_event(
        self,
        type_: str,
        payload: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
        seq: int | None = None,
    ) -> None:
        self.push(encode_event(type_, payload, session_id=session_id, seq=seq))

    def send_ready(self, payload: dict[str, Any] | None = None) -> None:
        self.push_event("gateway.ready", dict(CURRENT_READY if payload is None else payload))

    def reply(self, request_id: Any, result: Any) -> None:
        self.push(encode_reply(request_id, result))

    def reply_error(self, request_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.push({"jsonrpc": "2.0", "id": request_id, "error": error})

    # --- faults ---
    def close(self, code: int | None = 1000, reason: str = "") -> None:
        """The server closes (code None: a reset without a close frame)."""
        self.transport._shut(
            code if code is not None else 1006, reason or "closed by server", from_client=False
        )

    def blackhole(self) -> None:
        """Everything vanishes both ways from now on: no FIN, no RST, no pong."""
        self.blackholed = True

    # --- what the client sent ---
    def requests(self, method: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.received if method is None or r.get("method") == method]

    async def next_request(self, method: str | None = None, *, after: int = 0) -> dict[str, Any]:
        """Wait until the client has sent a request for `method` (the first one past `after`)."""
        while len(self.requests(method)) <= after:
            await self._arrival.wait()
        return self.requests(method)[after]

    def _receive(self, text: str) -> None:
        if self.blackholed:
            return
        msg = json.loads(text)
        self.received.append(msg)
        self._notify()
        method = msg.get("method")
        handler = self.gateway.handlers.get(method)
        if method == "gateway.ping" and handler is None and self.answers_pings:
            clock = self.gateway.pong_clock
            if clock is None:
                self.reply(msg["id"], {"ok": True})
            else:
                clock.call_later(
                    self.gateway.pong_delay, lambda: self.reply(msg["id"], {"ok": True})
                )
        elif method == "client.capabilities" and handler is None:
            # Like a gateway that does not send requests (0.19, 0.20.1, embedded): unknown.
            self.reply_error(msg["id"], -32601, "unknown method: client.capabilities")
        elif handler is not None:
            try:
                self.reply(msg["id"], handler(msg.get("params") or {}))
            except RpcFailure as exc:
                self.reply_error(msg["id"], exc.code, exc.message, exc.data)

    def _notify(self) -> None:
        arrival, self._arrival = self._arrival, asyncio.Event()
        arrival.set()

    def _on_transport_closed(self, from_client: bool) -> None:
        self.closed_by_client = from_client
        self.closed.set()


class FakeGateway:
    """Hands out a new FakeGatewayPeer per connect; pass `factory` as the transport_factory."""

    def __init__(
        self,
        *,
        ready: dict[str, Any] | None = None,
        auto_ready: bool = True,
        answers_pings: bool = True,
        pong_clock: Clock | None = None,
        pong_delay: float = 0.0,
    ) -> None:
        self.ready_payload = CURRENT_READY if ready is None else ready
        self.auto_ready = auto_ready
        self.answers_pings = answers_pings
        # With a clock, pongs and gateway.ping replies take `pong_delay` on it (a round trip).
        self.pong_clock = pong_clock
        self.pong_delay = pong_delay
        self.handlers: dict[str, Handler] = {}
        self.peers: list[FakeGatewayPeer] = []
        self.connect_errors: list[GatewayError] = []
        self.connect_kwargs: list[dict[str, Any]] = []

    @property
    def peer(self) -> FakeGatewayPeer:
        return self.peers[-1]

    async def factory(self, url: str, **kwargs: Any) -> MemoryTransport:
        self.connect_kwargs.append({"url": url, **kwargs})
        await asyncio.sleep(0)
        if self.connect_errors:
            raise self.connect_errors.pop(0)
        peer = FakeGatewayPeer(self, len(self.peers))
        self.peers.append(peer)
        if self.auto_ready:
            peer.send_ready(self.ready_payload)
        return peer.transport
