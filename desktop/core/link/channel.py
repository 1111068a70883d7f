"""What a gateway link needs of a socket, without a socket library: the Transport interface,
its factory, and the URL checks done before any connection (the websockets shell, which takes
~20 ms to import, is in transport.py and imported when the first link opens)."""

from __future__ import annotations

import ssl as ssl_lib
from collections.abc import Mapping
from typing import Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from desktop.common.hosts import is_loopback_host
from desktop.common.limits import MAX_FRAME_BYTES
from desktop.core.errors import ConnectError, InsecureTransportError

DEFAULT_MAX_FRAME = MAX_FRAME_BYTES


class Transport(Protocol):
    """One open message socket. Errors are this package's, never a library's."""

    @property
    def local_open(self) -> bool:
        """True until we closed it or learned that it closed."""
        ...

    @property
    def bytes_received(self) -> int:
        """Raw bytes read so far, whole frames or not: liveness sees a large frame arriving."""
        ...

    async def send(self, text: str) -> None:
        """Send one text frame; raises TransportClosedError when the socket is gone."""
        ...

    async def recv(self) -> str | bytes:
        """Next frame (bytes for a binary frame); raises TransportClosedError on close."""
        ...

    async def ping(self) -> float:
        """Protocol-level ping; returns the round trip in seconds or raises on close."""
        ...

    async def close(self) -> None:
        """Close politely (bounded in time); idempotent, never raises."""
        ...


class TransportFactory(Protocol):
    """Opens a Transport; `open_websocket` is the real one, tests pass a fake."""

    async def __call__(
        self,
        url: str,
        *,
        token: str | None,
        headers: Mapping[str, str] | None,
        ssl: ssl_lib.SSLContext | None,
        open_timeout: float,
        max_frame_size: int,
        allow_insecure: bool,
    ) -> Transport: ...


def redact_url(url: str) -> str:
    """The URL with any token-like query value replaced, safe to log."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = [
        (k, "***" if k.lower() in {"token", "access_token", "key", "api_key"} else v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
    ]
    return urlunsplit(parts._replace(query=urlencode(pairs, safe="*")))


def check_transport_security(url: str, token: str | None, *, allow_insecure: bool) -> None:
    """Refuse to send a token in clear text to a non-loopback host the user did not allow."""
    parts = urlsplit(url)
    if parts.scheme not in {"ws", "wss"}:
        raise ConnectError(f"not a WebSocket URL: {redact_url(url)}", retryable=False)
    if (
        token
        and parts.scheme == "ws"
        and not allow_insecure
        and not is_loopback_host(parts.hostname)
    ):
        raise InsecureTransportError(
            f"refusing to send a token over plain ws:// to {parts.hostname}; use wss://"
        )


def with_token(url: str, token: str | None) -> str:
    """The URL with `?token=` set (as Hermes expects); unchanged when there is no token."""
    if not token:
        return url
    parts = urlsplit(url)
    pairs = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "token"]
    pairs.append(("token", token))
    return urlunsplit(parts._replace(query=urlencode(pairs)))
