"""A small JSON-RPC test client over a real websocket, plus an in-process gateway fixture."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from desktop.common.clock import ManualClock
from desktop.gateway.providers.base import Provider
from desktop.gateway.rpc.server import GatewayConfig, GatewayServer

TOKEN = "test-token-123"


class RpcFailure(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message


class Client:
    """Collects events in order and matches replies to calls by id."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self.replies: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._waiters: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._changed = asyncio.Condition()
        self.closed = asyncio.Event()
        self._reader = asyncio.create_task(self._read(), name="test-client-reader")

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                frame = json.loads(raw)
                if frame.get("method") == "event":
                    self.events.append(frame["params"])
                else:
                    self.replies.append(frame)
                    fut = self._waiters.pop(frame.get("id"), None)
                    if fut is not None and not fut.done():
                        fut.set_result(frame)
                async with self._changed:
                    self._changed.notify_all()
        except ConnectionClosed:
            pass
        finally:
            self.closed.set()
            for fut in self._waiters.values():
                if not fut.done():
                    fut.set_exception(ConnectionError("socket closed"))
            async with self._changed:
                self._changed.notify_all()

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a call and return the raw reply frame."""
        rid = next(self._ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiters[rid] = fut
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            frame["params"] = params
        await self.ws.send(json.dumps(frame))
        return await fut

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        reply = await self.request(method, params)
        if "error" in reply:
            raise RpcFailure(reply["error"]["code"], reply["error"]["message"])
        result: dict[str, Any] = reply["result"]
        return result

    async def send_raw(self, data: str | bytes) -> dict[str, Any]:
        """Send a frame as-is and wait for the next reply frame (by arrival)."""
        before = len(self.replies)
        await self.ws.send(data)
        async with self._changed:
            await self._changed.wait_for(lambda: len(self.replies) > before or self.closed.is_set())
        return self.replies[before]

    async def wait_event(
        self, type_: str, session_id: str | None = None, n: int = 1
    ) -> dict[str, Any]:
        """The n-th event of this type (for this session) received so far, waiting if needed."""

        def found() -> list[dict[str, Any]]:
            return [
                e
                for e in self.events
                if e["type"] == type_ and (session_id is None or e.get("session_id") == session_id)
            ]

        async with self._changed:
            await self._changed.wait_for(lambda: len(found()) >= n or self.closed.is_set())
        hits = found()
        assert len(hits) >= n, f"socket closed before event {type_} #{n}"
        return hits[n - 1]

    def of(self, session_id: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("session_id") == session_id]

    async def close(self) -> None:
        if not self.closed.is_set():
            await self.ws.close()
        await self._reader


@asynccontextmanager
async def client(url: str, token: str = TOKEN, **kwargs: Any) -> AsyncIterator[Client]:
    ws = await connect(f"{url}?token={token}", max_size=None, **kwargs)
    c = Client(ws)
    try:
        await c.wait_event("gateway.ready")
        yield c
    finally:
        await c.close()


@asynccontextmanager
async def gateway(
    data_dir: Path, provider: Provider, clock: ManualClock | None = None, **config: Any
) -> AsyncIterator[GatewayServer]:
    cfg = GatewayConfig(data_dir=data_dir, token=TOKEN, ping_interval=None, debug=True, **config)
    server = GatewayServer(cfg, provider, clock or ManualClock())
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
