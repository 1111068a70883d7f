"""One client socket: frame decoding, in-order replies, a bounded send queue, paced reading."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import sys
from collections import deque
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from desktop.common.clock import Clock
from desktop.common.codec import dumps, loads
from desktop.common.codes import FRAME_TOO_LARGE, INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR
from desktop.common.limits import MAX_FRAME_BYTES
from desktop.common.memory import release_freed_memory
from desktop.common.methods import READY_EVENT
from desktop.gateway.rpc.methods import Methods
from desktop.gateway.sessions.events import LoggedEvent
from desktop.gateway.sessions.hub import SessionHub
from desktop.gateway.wire.faults import RpcFault, invalid_params, storage_fault
from desktop.gateway.wire.frames import fits, utf8_size
from desktop.gateway.wire.text import invalid_text_path, scrub

log = logging.getLogger(__name__)

# What a client that stops reading may have queued before it is dropped. A burst of requests
# never gets near it: reading pauses while the replies of earlier requests are unsent.
SEND_QUEUE_LIMIT = 1024
SEND_QUEUE_BYTES = 64 * 1024 * 1024
# Reading pauses above these (frames, bytes) and resumes once the writer is down to half.
READ_PAUSE_FRAMES = 256
READ_PAUSE_BYTES = 1024 * 1024
# A reply this big (a list of thousands of chats, a page of history) left its rows, its
# encoding and its bytes free once sent: the heap is handed back to the system then.
BIG_FRAME = 256 * 1024


class Connection:
    """Serves one socket; a client that cannot keep up with its queue is dropped, not waited for."""

    def __init__(
        self,
        ws: ServerConnection,
        hub: SessionHub,
        methods: Methods,
        clock: Clock,
        *,
        queue_limit: int = SEND_QUEUE_LIMIT,
        queue_bytes: int = SEND_QUEUE_BYTES,
        max_frame: int = MAX_FRAME_BYTES,
    ) -> None:
        self._ws = ws
        self._max_frame = max_frame
        self._hub = hub
        self._methods = methods
        self._clock = clock
        # A plain deque and one waiter future: asyncio.Queue's bookkeeping per frame is more
        # than the rest of the send path together.
        self._pending: deque[str] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._queue_limit = queue_limit if queue_limit > 0 else sys.maxsize
        self._queue_bytes_limit = queue_bytes
        self._queued_bytes = 0
        self._drained: asyncio.Future[None] | None = None
        self._open = True
        self._last_inbound = clock.monotonic()
        self.dropped_slow = False

    @property
    def open(self) -> bool:
        return self._open

    @property
    def last_inbound(self) -> float:
        return self._last_inbound

    def send_event(self, params: dict[str, Any]) -> None:
        """Queue one event; a logged event's frame was encoded once, when it was logged."""
        if type(params) is LoggedEvent:
            self._push(params.frame)
        else:
            self._push(dumps({"jsonrpc": "2.0", "method": "event", "params": params}))

    def _enqueue(self, frame: dict[str, Any]) -> None:
        data = dumps(frame)
        if not fits(data, self._max_frame):
            # The client would close its socket on this frame (1009), and asking again would
            # do the same: answer with an error that says why, and keep the link.
            size = utf8_size(data)
            log.warning(
                "a reply of %d bytes exceeds the %d-byte frame limit: sent an error instead",
                size,
                self._max_frame,
            )
            fault = RpcFault(
                FRAME_TOO_LARGE,
                f"result too large for one frame ({size} bytes, limit {self._max_frame})",
                {"size": size, "limit": self._max_frame},
            )
            data = dumps(_error(frame.get("id"), fault))
        self._push(data)

    def _push(self, data: str) -> None:
        if not self._open:
            return
        size = len(data)
        queued = self._queued_bytes
        if len(self._pending) >= self._queue_limit or (
            queued and queued + size > self._queue_bytes_limit
        ):
            self.dropped_slow = True
            log.warning("dropping a client that cannot keep up with its events")
            self._mark_closed()
            # Its socket buffers are full, so a close handshake would stall too: cut it.
            self._ws.transport.abort()
            return
        self._pending.append(data)
        self._queued_bytes = queued + size
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def _mark_closed(self) -> None:
        if self._open:
            self._open = False
            self._hub.detach(self)
            self._wake_reader()

    def _backlogged(self) -> bool:
        return len(self._pending) > READ_PAUSE_FRAMES or self._queued_bytes > READ_PAUSE_BYTES

    def _wake_reader(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    async def _until_drained(self) -> None:
        """Back-pressure: stop taking requests until the writer has sent most replies."""
        self._drained = asyncio.get_running_loop().create_future()
        await self._drained

    async def serve(self, ready: dict[str, Any]) -> None:
        """Run until the socket closes; every session it owned is detached, never stopped."""
        self.send_event({"type": READY_EVENT, "payload": ready})
        writer = asyncio.create_task(self._write(), name="gateway-writer")
        try:
            async for message in self._ws:
                self._last_inbound = self._clock.monotonic()
                reply = self.answer(message)
                if reply is not None:
                    self._enqueue(reply)
                    # Not kept until the next request: a long list's rows go once it is sent.
                    del reply
                if self._open and self._backlogged():
                    await self._until_drained()
                if not self._open:
                    break
        except ConnectionClosed:
            pass
        finally:
            self._mark_closed()
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)

    async def _write(self) -> None:
        pending = self._pending
        send = self._ws.send
        loop = asyncio.get_running_loop()
        try:
            while True:
                while pending:
                    frame = pending.popleft()
                    self._queued_bytes -= len(frame)
                    if self._drained is not None and len(pending) <= READ_PAUSE_FRAMES // 2:
                        self._wake_reader()
                    try:
                        data = frame.encode()
                    except UnicodeEncodeError:
                        # A lone surrogate got into a frame: send it replaced, keep the socket
                        # (websockets would close it with 1011 on its own encode error).
                        log.warning("replaced invalid text in an outgoing frame")
                        data = scrub(frame).encode()
                    await send(data, text=True)
                    if len(frame) >= BIG_FRAME:
                        del frame, data
                        release_freed_memory(collect=True)
                if self._drained is not None:
                    self._wake_reader()
                waiter = self._waiter = loop.create_future()
                await waiter
        except ConnectionClosed:
            self._mark_closed()

    def answer(self, message: str | bytes) -> dict[str, Any] | None:
        """The reply to one message from the client (None for a notification); never raises."""
        try:
            text = message.decode("utf-8") if isinstance(message, bytes) else message
            request = loads(text.strip())
        except (UnicodeDecodeError, ValueError, RecursionError):
            return _error(None, RpcFault(PARSE_ERROR, "parse error: not valid JSON"))
        if not isinstance(request, dict):
            return _error(None, RpcFault(INVALID_REQUEST, "invalid request: expected an object"))
        rid = request.get("id")
        if not isinstance(rid, (str, int, type(None))) or isinstance(rid, bool):
            return _error(None, RpcFault(INVALID_REQUEST, "invalid request: bad id"))
        if invalid_text_path(rid) is not None:
            return _error(None, RpcFault(INVALID_REQUEST, "invalid request: id is not valid text"))
        method = request.get("method")
        params = request.get("params", {})
        if params is None:
            params = {}
        if request.get("jsonrpc") != "2.0" or not isinstance(method, str):
            return _error(
                rid, RpcFault(INVALID_REQUEST, "invalid request: need jsonrpc and method")
            )
        if not isinstance(params, dict):
            return _error(
                rid, RpcFault(INVALID_REQUEST, "invalid request: params must be an object")
            )
        if invalid_text_path(method) is not None:
            return _error(rid, RpcFault(INVALID_REQUEST, "invalid request: bad method name"))
        # Text the gateway stores or echoes must be encodable: refuse a lone surrogate here.
        bad = invalid_text_path(params)
        if bad is not None:
            fault = invalid_params(f"{bad} is not valid Unicode text (lone surrogate)")
            return _error(rid, fault) if "id" in request else None
        try:
            result = self._methods.call(self, method, params)
        except RpcFault as fault:
            return _error(rid, fault) if "id" in request else None
        except sqlite3.Error as exc:
            log.error("method %s: gateway storage failed: %s", method, exc)
            return _error(rid, storage_fault(exc)) if "id" in request else None
        except Exception:
            log.exception("method %s failed", method)
            internal = RpcFault(INTERNAL_ERROR, "internal error")
            return _error(rid, internal) if "id" in request else None
        if "id" not in request:
            return None  # a notification: no reply
        return {"jsonrpc": "2.0", "id": rid, "result": result}


def _error(rid: object, fault: RpcFault) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": fault.to_error()}
