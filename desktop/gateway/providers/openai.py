"""Streaming chat completions from any OpenAI-compatible HTTP API, hardened against dead sockets."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

from .base import ChatMessage, Chunk, ProviderError, Usage
from .keepalive import keepalive_options
from .sse import StreamDecoder

log = logging.getLogger(__name__)

TransportFactory = Callable[[], httpx.AsyncBaseTransport]
# Statuses that say "this server, right now" rather than "this request": another provider (or
# this one later) may well answer. 429 is here on purpose: a rate limit must never stand in the
# way of a fallback, and the health watcher is what brings the primary back.
_TRANSIENT_STATUSES = frozenset({408, 425, 429})


class _Pool:
    """One httpx client and the count of streams using it; a retired pool closes when unused."""

    __slots__ = ("client", "retired", "users")

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.users = 0
        self.retired = False


class OpenAICompatibleProvider:
    """A provider speaking `POST {base_url}/chat/completions` with `stream: true`.

    Every socket gets TCP keepalives; a stream that stays silent for `idle_timeout` seconds fails
    as a transport error; after any transport error the connection pool is thrown away (closed
    once its other streams end) so a dead or half-closed socket is never reused.

    `transport` is for tests: an `httpx.AsyncBaseTransport` (reused across rebuilds) or a
    zero-argument factory returning a fresh one per rebuild.
    """

    def __init__(
        self,
        name: str,
        base_url: str,
        api_key: str,
        model: str,
        *,
        idle_timeout: float = 60.0,
        connect_timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | TransportFactory | None = None,
    ) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.idle_timeout = idle_timeout
        self.connect_timeout = connect_timeout
        self.rebuilds = 0  # pools thrown away after a transport failure
        self._api_key = api_key
        self._transport = transport
        self._pool: _Pool | None = None
        self._last_usage: Usage | None = None

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAICompatibleProvider({self.name!r}, {self.base_url!r}, model={self.model!r})"

    @property
    def last_usage(self) -> Usage | None:
        return self._last_usage

    async def stream(self, messages: list[ChatMessage]) -> AsyncIterator[Chunk]:
        self._last_usage = None
        body = {
            "model": self.model,
            "messages": [_wire_message(m) for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        decoder = StreamDecoder(self.name, self.model)
        pool = self._acquire()
        failed = False
        try:
            request = pool.client.build_request("POST", "/chat/completions", json=body)
            async with asyncio.timeout(self.connect_timeout + self.idle_timeout):
                response = await pool.client.send(request, stream=True)
            try:
                if response.status_code >= 400:
                    async with asyncio.timeout(self.idle_timeout):
                        await response.aread()
                    raise self._status_error(response.status_code, response.text)
                # Read to the end of the body even after [DONE]: breaking out would leave
                # httpx's nested generators suspended, to be finalized later as stray tasks.
                lines = response.aiter_lines()
                while True:
                    try:
                        async with asyncio.timeout(self.idle_timeout):
                            line = await anext(lines)
                    except StopAsyncIteration:
                        break
                    for chunk in () if decoder.done else decoder.feed_line(line):
                        yield chunk
                for chunk in decoder.flush():
                    yield chunk
            finally:
                with contextlib.suppress(httpx.HTTPError):
                    await response.aclose()
            if not (decoder.done or decoder.finished):
                raise ProviderError(
                    f"{self.name} closed the stream before the answer was complete",
                    transport=True,
                )
            self._last_usage = decoder.usage or Usage(provider=self.name, model=self.model)
        except TimeoutError as exc:
            failed = True
            raise ProviderError(
                f"{self.name} sent nothing for {self.idle_timeout:g} s", transport=True
            ) from exc
        except httpx.HTTPError as exc:
            error = self._translate(exc)
            failed = error.transport
            raise error from exc
        except ProviderError as exc:
            failed = exc.transport
            raise
        finally:
            await self._release(pool, failed=failed)

    async def probe(self) -> None:
        """Reachability check for the health watcher: `GET /models`, no tokens spent.

        Any answer below 500 (even 404 from a server without the endpoint) proves the transport.
        """
        pool = self._acquire()
        failed = False
        try:
            async with asyncio.timeout(2 * self.connect_timeout):
                response = await pool.client.get("/models", timeout=self.connect_timeout)
            status = response.status_code
            if status >= 500 or status in _TRANSIENT_STATUSES:
                raise ProviderError(f"{self.name} answered HTTP {status}", transport=True)
        except TimeoutError as exc:
            failed = True
            raise ProviderError(f"{self.name} did not answer", transport=True) from exc
        except httpx.HTTPError as exc:
            failed = True
            raise self._translate(exc) from exc
        except ProviderError:
            failed = True
            raise
        finally:
            await self._release(pool, failed=failed)

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.client.aclose()

    # -- pool lifecycle ----------------------------------------------------------------------

    def _acquire(self) -> _Pool:
        if self._pool is None:
            self._pool = _Pool(self._new_client())
        self._pool.users += 1
        return self._pool

    async def _release(self, pool: _Pool, *, failed: bool) -> None:
        pool.users -= 1
        if failed and pool is self._pool:
            # Its other sockets may be dead or half-closed too: no new stream gets this pool.
            pool.retired = True
            self._pool = None
            self.rebuilds += 1
            log.info("provider %s: connection pool discarded after a transport failure", self.name)
        if pool.retired and pool.users == 0:
            await pool.client.aclose()

    def _new_client(self) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        timeout = httpx.Timeout(
            connect=self.connect_timeout,
            read=self.idle_timeout,
            write=self.idle_timeout,
            pool=self.connect_timeout,
        )
        return httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=timeout,
            transport=self._new_transport(),
            follow_redirects=False,
        )

    def _new_transport(self) -> httpx.AsyncBaseTransport:
        if self._transport is None:
            return httpx.AsyncHTTPTransport(socket_options=keepalive_options(), retries=0)
        if isinstance(self._transport, httpx.AsyncBaseTransport):
            return self._transport
        return self._transport()

    # -- error translation (once, at the boundary) -------------------------------------------

    def _translate(self, exc: httpx.HTTPError) -> ProviderError:
        # Words a person understands, never an exception class name ("RemoteProtocolError").
        host = urlsplit(self.base_url).netloc or self.base_url
        if isinstance(exc, httpx.ConnectTimeout):
            text = f"cannot reach {host}: no connection within {self.connect_timeout:g} s"
        elif isinstance(exc, httpx.TimeoutException):
            text = f"{self.name} sent nothing for {self.idle_timeout:g} s"
        elif isinstance(exc, httpx.ConnectError):
            text = f"cannot reach {host}: {_os_reason(exc) or 'nothing answers there'}"
        elif isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
            text = f"{self.name} closed the stream before the answer was complete"
        elif isinstance(exc, httpx.WriteError):
            text = f"the connection to {self.name} broke while the request was sent"
        elif isinstance(exc, httpx.TransportError):
            text = f"the connection to {self.name} broke"
        else:
            return ProviderError(f"{self.name}: {self._redact(str(exc))}", transport=False)
        return ProviderError(text, transport=True)

    def _status_error(self, status: int, body: str) -> ProviderError:
        detail = self._redact(_error_detail(body))
        suffix = f": {detail}" if detail else ""
        if status in (401, 403):
            text = f"{self.name} refused the API key (HTTP {status})"
            return ProviderError(text, transport=False, status=status)
        if status == 404:
            text = f"unknown model '{self.model}' at {self.name} (HTTP 404{suffix})"
            return ProviderError(text, transport=False, status=status)
        if status >= 500 or status in _TRANSIENT_STATUSES:
            text = f"{self.name} failed with HTTP {status}{suffix}"
            return ProviderError(text, transport=True, status=status)
        text = f"{self.name} rejected the request (HTTP {status}){suffix}"
        return ProviderError(text, transport=False, status=status)

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text


def _wire_message(message: ChatMessage) -> dict[str, Any]:
    if not message.images:
        return {"role": message.role, "content": message.content}
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
    parts += [{"type": "image_url", "image_url": {"url": url}} for url in message.images]
    return {"role": message.role, "content": parts}


def _os_reason(exc: BaseException) -> str:
    """The operating system's words for why a connection failed ("connection refused", "name
    or service not known"), or "" when no OS error is behind it."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, OSError) and (cause.errno or cause.strerror):
            return (os.strerror(cause.errno) if cause.errno else str(cause.strerror)).lower()
        cause = cause.__cause__ or cause.__context__
    return ""


def _error_detail(body: str) -> str:
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, ValueError):
        return body.strip()[:200]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or "")[:200]
    if isinstance(error, str):
        return error[:200]
    return ""
