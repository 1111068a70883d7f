"""An OpenAI-compatible chat server on loopback, in its own thread, with switchable faults.

Usable from sync tests, async tests and subprocesses (point a real hermes-agent at `.base_url`)::

    with FakeOpenAIServer(reply="Hello!") as fake:
        fake.status = 503                # every request answers 503 until reset to None
        fake.stall_after_chunks = 2      # go silent mid-stream, connection left open
        fake.reset_after_chunks = 2      # RST (SO_LINGER 0) mid-stream
        fake.close_idle_keepalive()      # server-side FIN on idle keep-alive connections
        fake.api_key = "sk-x"            # requests without `Authorization: Bearer sk-x` get 401
        fake.models = ["a", "b"]         # what GET /v1/models lists (default: just `model`)

Scripted agent turns: each streamed request takes the next entry of `fake.script` (then falls
back to `reply`), so a test can make a real agent call tools::

        fake.script = [
            {"tool_calls": [("terminal", {"command": "chmod 777 x"})], "reasoning": "hm"},
            {"content": "Done."},
        ]
        fake.side_reply = "UNSURE"       # non-streamed side calls (0.19 smart approvals, titles)

A turn with `"gate": threading.Event()` waits for it before answering (a test cuts the client
off first); `fake.wait_until(predicate)` blocks until it holds, rechecked on every request.

Answers by what is asked instead of in order, where requests race (a subagent and its parent,
a gateway's own turn after a background helper ends): `fake.respond = fn`, called with each
chat request's JSON body, returns the turn to answer with (the same shape as a script entry;
streamed or not, as the request asks) or None for the script / `reply` / `side_reply`::

        fake.respond = lambda body: {"content": "Three."} if GOAL in last_user(body) else None

It speaks just enough HTTP/1.1: keep-alive, Content-Length or chunked request bodies, and
chunked `text/event-stream` replies, so connection reuse behaves as with a real provider.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from tests.support.loop_thread import LoopThreadServer

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


class _Conn:
    __slots__ = ("idle", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle = True


class FakeOpenAIServer(LoopThreadServer):
    """A fake `/v1/chat/completions` + `/v1/models` server; see the module docstring."""

    thread_name = "fake-openai"

    def __init__(
        self,
        reply: str = "Hello from the fake model.",
        *,
        chunk_size: int = 8,
        chunk_delay: float = 0.0,
        model: str = "fake-model",
        reasoning: str = "",
    ) -> None:
        super().__init__()
        self.reply = reply
        self.chunk_size = max(1, chunk_size)
        self.chunk_delay = chunk_delay
        self.model = model
        self.reasoning = reasoning  # streamed first as delta.reasoning_content when set
        # Fault knobs: plain attributes, read at the start of each request.
        self.status: int | None = None
        self.stall_after_chunks: int | None = None
        self.reset_after_chunks: int | None = None
        self.api_key: str | None = None
        self.models: list[str] | None = None
        self.requests: list[dict[str, Any]] = []  # JSON bodies of chat completion requests
        # Streamed turns answered in order: {content?, reasoning?, tool_calls?: [(name, args)]}.
        self.script: list[dict[str, Any]] = []
        # The answer to non-streamed requests when set (else `reply`).
        self.side_reply: str | None = None
        # Content-routed answers (see the module docstring): consulted before the script.
        self.respond: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
        self.streams_done = 0  # streamed answers sent in full
        self._cond = threading.Condition()
        self.hits: list[str] = []  # "METHOD /path" of every request, in arrival order
        self._conns: set[_Conn] = set()

    # -- public API --------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def open_connections(self) -> int:
        return len(self._conns)

    def set_reply(self, text: str, *, chunk_delay: float | None = None) -> None:
        self.reply = text
        if chunk_delay is not None:
            self.chunk_delay = chunk_delay

    def wait_until(self, predicate: Any, timeout: float = 60.0) -> bool:
        """Block until `predicate(self)` holds, rechecked on every request and finished stream."""
        with self._cond:
            return bool(self._cond.wait_for(lambda: predicate(self), timeout))

    def _notify(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def clear_faults(self) -> None:
        self.status = None
        self.stall_after_chunks = None
        self.reset_after_chunks = None

    def close_idle_keepalive(self) -> int:
        """Close (FIN) every connection waiting for its next request; returns how many."""
        return self._call(self._close_idle())

    async def _close_idle(self) -> int:
        idle = [c for c in self._conns if c.idle]
        for conn in idle:
            conn.writer.close()
        return len(idle)

    # -- HTTP --------------------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Conn(reader, writer)
        self._conns.add(conn)
        try:
            while True:
                conn.idle = True
                request = await _read_request(reader)
                if request is None:
                    return
                conn.idle = False
                method, path, headers, body = request
                self.hits.append(f"{method} {path.split('?')[0]}")
                if self.api_key is not None and headers.get("authorization") != (
                    f"Bearer {self.api_key}"
                ):
                    keep = await _send_json(conn.writer, 401, _error_body(401))
                else:
                    keep = await self._dispatch(conn, method, path.split("?")[0], body)
                if not keep or headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            return
        finally:
            self._conns.discard(conn)
            if not writer.transport.is_closing():
                writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _dispatch(self, conn: _Conn, method: str, path: str, body: bytes) -> bool:
        """Answers one request; False when the connection must not be reused."""
        is_chat = method == "POST" and path.rstrip("/") == "/v1/chat/completions"
        payload: dict[str, Any] = {}
        if is_chat:
            try:
                payload = json.loads(body or b"{}")
            except json.JSONDecodeError:
                return await _send_json(conn.writer, 400, _error_body(400))
            self.requests.append(payload)  # recorded even when a fault answers it
            self._notify()
        if self.status is not None:
            return await _send_json(conn.writer, self.status, _error_body(self.status))
        if is_chat:
            if payload.get("stream"):
                return await self._stream(conn, payload)
            turn = self._routed(payload)
            await _wait_gate(turn)
            return await _send_json(conn.writer, 200, self._completion(payload, turn))
        if method == "GET" and path.rstrip("/") == "/v1/models":
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                for m in (self.models if self.models is not None else [self.model])
            ]
            return await _send_json(conn.writer, 200, {"object": "list", "data": data})
        if method == "GET" and path.startswith("/v1/models/"):
            model = {"id": path.rsplit("/", 1)[1], "object": "model", "owned_by": "fake"}
            return await _send_json(conn.writer, 200, model)
        return await _send_json(conn.writer, 404, _error_body(404))

    def _routed(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        """The turn `respond` picks for this request, if it picks one."""
        return self.respond(payload) if self.respond is not None else None

    def _completion(self, payload: dict[str, Any], turn: dict[str, Any] | None) -> dict[str, Any]:
        if turn is not None:
            reply = str(turn.get("content", ""))
        else:
            reply = self.side_reply if self.side_reply is not None else self.reply
        message: dict[str, Any] = {"role": "assistant", "content": reply}
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
        calls = (turn or {}).get("tool_calls") or []
        if calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{len(self.requests)}_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for i, (name, args) in enumerate(calls)
            ]
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": payload.get("model") or self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": _usage(payload, reply),
        }

    async def _stream(self, conn: _Conn, payload: dict[str, Any]) -> bool:
        writer = conn.writer
        stall, reset = self.stall_after_chunks, self.reset_after_chunks
        model = payload.get("model") or self.model
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
        )
        writer.write(head.encode())
        routed = self._routed(payload)
        turn = routed if routed is not None else self.script.pop(0) if self.script else {}
        await _wait_gate(turn)
        reply = str(turn.get("content", "" if turn else self.reply))
        events = [{"role": "assistant", "content": ""}]
        reasoning = str(turn.get("reasoning", self.reasoning))
        events += _pieces("reasoning_content", reasoning, self.chunk_size)
        events += _pieces("content", reply, self.chunk_size)
        calls = turn.get("tool_calls") or []
        for i, (name, args) in enumerate(calls):
            events += _tool_call_deltas(i, f"call_{len(self.requests)}_{i}", name, args)
        finish = "tool_calls" if calls else "stop"
        for sent, delta in enumerate(events):
            if sent == stall:
                await _drain_until_eof(conn.reader)  # silent, connection left open
                return False
            if sent == reset:
                _rst(writer)
                return False
            await _send_chunk(writer, _event(model, delta, None))
            if self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)
        await _send_chunk(writer, _event(model, {}, finish))
        if (payload.get("stream_options") or {}).get("include_usage"):
            usage = _event(model, None, None)
            usage["choices"] = []
            usage["usage"] = _usage(payload, reply)
            await _send_chunk(writer, usage)
        writer.write(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()
        self.streams_done += 1
        self._notify()
        return True


async def _wait_gate(turn: dict[str, Any] | None) -> None:
    gate = (turn or {}).get("gate")
    while gate is not None and not gate.is_set():
        await asyncio.sleep(0.02)  # released by the test from its own thread


def _pieces(field: str, text: str, size: int) -> list[dict[str, Any]]:
    return [{field: text[i : i + size]} for i in range(0, len(text), size)]


def _tool_call_deltas(index: int, call_id: str, name: str, args: dict[str, Any]) -> list[Any]:
    """A streamed tool call as providers send it: id and name first, then argument pieces."""
    head = {"index": index, "id": call_id, "type": "function"}
    first = {"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]}
    text = json.dumps(args)
    rest = [
        {"tool_calls": [{"index": index, "function": {"arguments": text[i : i + 16]}}]}
        for i in range(0, len(text), 16)
    ]
    return [first, *rest]


def _event(model: str, delta: dict[str, Any] | None, finish: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }


def _usage(payload: dict[str, Any], reply: str) -> dict[str, int]:
    prompt = sum(len(str(m.get("content", ""))) for m in payload.get("messages") or []) // 4 + 1
    completion = len(reply) // 4 + 1
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _error_body(status: int) -> dict[str, Any]:
    kind = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}
    return {
        "error": {
            "message": f"fake provider error {status}",
            "type": kind.get(status, "server_error"),
            "code": kind.get(status, str(status)),
        }
    }


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def _send_chunk(writer: asyncio.StreamWriter, event: dict[str, Any]) -> None:
    writer.write(_chunk(b"data: " + json.dumps(event).encode() + b"\n\n"))
    await writer.drain()


async def _send_json(writer: asyncio.StreamWriter, status: int, body: dict[str, Any]) -> bool:
    data = json.dumps(body).encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: keep-alive\r\n\r\n"
    )
    writer.write(head.encode() + data)
    await writer.drain()
    return True


async def _drain_until_eof(reader: asyncio.StreamReader) -> None:
    while await reader.read(65536):
        pass


def _rst(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def _read_request(
    reader: asyncio.StreamReader,
) -> tuple[str, str, dict[str, str], bytes] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            key, value = line.split(":", 1)
            headers[key.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b"".join([part async for part in _chunked_body(reader)])
    else:
        body = await reader.readexactly(int(headers.get("content-length", "0")))
    return method, path, headers, body


async def _chunked_body(reader: asyncio.StreamReader) -> Any:
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return
        yield await reader.readexactly(size)
        await reader.readexactly(2)


@contextlib.contextmanager
def fake_openai(**kwargs: Any) -> Iterator[FakeOpenAIServer]:
    """Function form of `with FakeOpenAIServer(...) as fake:`."""
    with FakeOpenAIServer(**kwargs) as fake:
        yield fake
