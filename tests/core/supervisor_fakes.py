"""A scriptable fake gateway client for supervisor and session-router tests (counts sockets)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from desktop.core.errors import NotConnectedError, RpcError
from desktop.core.link.protocol import Event
from desktop.core.link.supervisor import Endpoint


@dataclass
class FakeCaps:
    event_replay: bool = False
    replay_epoch: str | None = None
    heartbeat: bool = False
    history_window: bool = False
    # As Dialect: methods answered -32601 on this connection (the client learns them).
    missing: set[str] = field(default_factory=set)

    def has(self, method: str) -> bool:
        return method not in self.missing


Handler = Callable[[str, dict[str, Any]], Any]


@dataclass
class FakeNet:
    """Shared by every FakeClient of one test: the script of outcomes and socket counts."""

    outcomes: list[Any] = field(default_factory=list)  # Exception | asyncio.Future | "ok"
    default: Any = "ok"
    opens: int = 0
    closes: int = 0
    max_live: int = 0
    attempts: int = 0
    clients: list[FakeClient] = field(default_factory=list)
    caps: FakeCaps = field(default_factory=FakeCaps)
    handler: Handler | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    replies: list[tuple[int | str, Any]] = field(default_factory=list)

    @property
    def live(self) -> int:
        return self.opens - self.closes

    def factory(self, endpoint: Endpoint) -> FakeClient:
        client = FakeClient(self, endpoint, len(self.clients) + 1)
        self.clients.append(client)
        return client

    def next_outcome(self) -> Any:
        return self.outcomes.pop(0) if self.outcomes else self.default


class FakeClient:
    """Implements the JsonRpcGatewayClient surface the supervisor uses."""

    def __init__(self, net: FakeNet, endpoint: Endpoint, generation: int) -> None:
        self.net = net
        self.endpoint = endpoint
        self.generation = generation
        self.dialect: FakeCaps | None = None
        self.socket_open = False
        self.connected = False
        self.last_inbound_at: float | None = None
        self.rtt_samples = [0.01]
        self._listeners: list[Callable[[Any, int], None]] = []
        self._closed_cbs: list[Callable[[str, int | None, int], None]] = []

    def subscribe(self, listener: Callable[[Any, int], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def on_closed(self, cb: Callable[[str, int | None, int], None]) -> None:
        self._closed_cbs.append(cb)

    async def connect(self) -> FakeCaps:
        self.net.attempts += 1
        self._open_socket()
        outcome = self.net.next_outcome()
        try:
            if isinstance(outcome, asyncio.Future):
                await outcome
            elif isinstance(outcome, BaseException):
                raise outcome
        except BaseException:
            self._close_socket()
            raise
        self.connected = True
        self.dialect = self.net.caps
        return self.net.caps

    async def reply(self, request_id: int | str, result: Any) -> None:
        if not self.connected:
            raise NotConnectedError("not connected")
        self.net.replies.append((request_id, result))

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> Any:
        if not self.connected:
            raise NotConnectedError("not connected")
        params = params or {}
        self.net.calls.append((method, params))
        await asyncio.sleep(0)
        if self.net.handler is None:
            raise RpcError(-32601, "method not found", method=method)
        result = self.net.handler(method, params)
        if isinstance(result, asyncio.Future):
            result = await result  # a reply the test releases later (a call in flight)
        if isinstance(result, RpcError) and result.code == -32601 and self.dialect is not None:
            self.dialect.missing.add(method)  # as the real client's Dialect.learn
        if isinstance(result, BaseException):
            raise result
        return result

    def emit(
        self, type_: str, session_id: str | None = None, seq: int | None = None, **payload: Any
    ) -> None:
        event = Event(type_, session_id, payload, seq)
        for listener in list(self._listeners):
            listener(event, self.generation)

    def emit_event(self, event: Event) -> None:
        for listener in list(self._listeners):
            listener(event, self.generation)

    def drop(self, reason: str = "connection reset", code: int | None = 1006) -> None:
        """The peer went away: the socket closes and on_closed fires."""
        self._close_socket()
        self.connected = False
        for cb in list(self._closed_cbs):
            cb(reason, code, self.generation)

    def invalidate(self, reason: str) -> None:
        if self.socket_open:
            self.drop(reason, None)

    async def close(self) -> None:
        await asyncio.sleep(0)
        self._close_socket()
        self.connected = False

    def _open_socket(self) -> None:
        self.socket_open = True
        self.net.opens += 1
        self.net.max_live = max(self.net.max_live, self.net.live)

    def _close_socket(self) -> None:
        if self.socket_open:
            self.socket_open = False
            self.net.closes += 1


async def until(predicate: Callable[[], bool], what: str = "condition", rounds: int = 200) -> None:
    """Let the loop run until predicate holds; fails (no wall-clock wait) if it never does."""
    for _ in range(rounds):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never reached: {what}")
