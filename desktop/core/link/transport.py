"""The client's one WebSocket boundary: the websockets shell behind the Transport interface
(channel.py; both named here too)."""

from __future__ import annotations

import logging
import ssl as ssl_lib
from collections.abc import Mapping
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import (
    ConnectionClosed,
    InvalidHandshake,
    InvalidStatus,
    InvalidURI,
    PayloadTooBig,
)

from desktop.common.hosts import is_loopback_host
from desktop.core.errors import CLOSE_TOO_BIG, AuthError, ConnectError, TransportClosedError
from desktop.core.link.channel import (
    DEFAULT_MAX_FRAME,
    Transport,
    TransportFactory,
    check_transport_security,
    redact_url,
    with_token,
)

__all__ = [
    "DEFAULT_MAX_FRAME",
    "Transport",
    "TransportFactory",
    "WebSocketTransport",
    "check_transport_security",
    "open_websocket",
    "redact_url",
    "with_token",
]

log = logging.getLogger(__name__)


def _closed_error(exc: ConnectionClosed) -> TransportClosedError:
    frame = exc.rcvd or exc.sent
    if frame is None:
        return TransportClosedError("connection lost without a close frame", code=1006)
    return TransportClosedError(frame.reason or "connection closed", code=frame.code)


class _CountingConnection(ClientConnection):
    """Counts raw inbound bytes, so liveness can see a large frame that is still arriving."""

    bytes_received = 0

    def data_received(self, data: bytes) -> None:
        self.bytes_received += len(data)
        super().data_received(data)


class WebSocketTransport:
    """Transport over a websockets ClientConnection; translates library errors once, here."""

    def __init__(self, ws: ClientConnection, label: str) -> None:
        self._ws = ws
        self._label = label
        self._closed = False

    @property
    def bytes_received(self) -> int:
        """Raw bytes read from the socket so far, whole frames or not."""
        return getattr(self._ws, "bytes_received", 0)

    @property
    def local_open(self) -> bool:
        return not self._closed and self._ws.close_code is None

    def __repr__(self) -> str:
        return f"<WebSocketTransport {self._label} open={self.local_open}>"

    async def send(self, text: str) -> None:
        try:
            data = text.encode()
        except UnicodeEncodeError:
            # A lone surrogate (e.g. pasted text) has no UTF-8 form; websockets would close the
            # socket over it. Send it as U+FFFD instead: one bad value never costs the link.
            data = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode()
        try:
            await self._ws.send(data, text=True)
        except ConnectionClosed as exc:
            raise _closed_error(exc) from exc
        except OSError as exc:
            raise TransportClosedError(f"send failed: {exc.__class__.__name__}") from exc

    async def recv(self) -> str | bytes:
        try:
            return await self._ws.recv()
        except ConnectionClosed as exc:
            raise _closed_error(exc) from exc
        except PayloadTooBig as exc:
            raise TransportClosedError("frame too big", code=CLOSE_TOO_BIG) from exc
        except OSError as exc:
            raise TransportClosedError(f"receive failed: {exc.__class__.__name__}") from exc

    async def ping(self) -> float:
        try:
            waiter = await self._ws.ping()
            return await waiter
        except ConnectionClosed as exc:
            raise _closed_error(exc) from exc
        except OSError as exc:
            raise TransportClosedError(f"ping failed: {exc.__class__.__name__}") from exc

    def abort(self) -> None:
        """Tear the socket down now, without a close handshake (the link is abandoned)."""
        self._closed = True
        transport = self._ws.transport
        try:
            transport.abort()
        except Exception as exc:  # already torn down (connection_lost has run), or no socket
            log.debug("abort of a closed socket: %s", exc.__class__.__name__)

    async def close(self) -> None:
        self._closed = True
        try:
            await self._ws.close()
        except Exception:  # closing a broken socket may fail in many ways; it is closed either way
            log.debug("close of %s raised", self._label, exc_info=True)


async def open_websocket(
    url: str,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    ssl: ssl_lib.SSLContext | None = None,
    open_timeout: float = 10.0,
    max_frame_size: int = DEFAULT_MAX_FRAME,
    allow_insecure: bool = False,
) -> Transport:
    """Open a WebSocket with our own liveness (library pings off) and typed errors."""
    check_transport_security(url, token, allow_insecure=allow_insecure)
    label = redact_url(url)
    host = urlsplit(url).hostname
    try:
        ws = await connect(
            with_token(url, token),
            additional_headers=dict(headers) if headers else None,
            ssl=ssl if url.startswith("wss:") else None,
            # Loopback must never be sent through an environment proxy.
            proxy=None if is_loopback_host(host) else True,
            open_timeout=open_timeout,
            ping_interval=None,
            close_timeout=1.0,
            max_size=max_frame_size,
            compression=None,
            create_connection=_CountingConnection,
        )
    except InvalidStatus as exc:
        status = exc.response.status_code
        if status in (401, 403):
            raise AuthError(f"gateway refused the token (HTTP {status})", status=status) from exc
        raise ConnectError(
            f"handshake with {label} failed: HTTP {status}", retryable=True, status=status
        ) from exc
    except InvalidURI as exc:
        raise ConnectError(f"invalid gateway URL {label}", retryable=False) from exc
    except InvalidHandshake as exc:
        raise ConnectError(f"handshake with {label} failed: {exc.__class__.__name__}") from exc
    except TimeoutError as exc:
        raise ConnectError(f"opening {label} timed out", silent=True) from exc
    except OSError as exc:
        # Refused, reset, unreachable, DNS failure (socket.gaierror is an OSError).
        raise ConnectError(f"cannot reach {label}: {exc.__class__.__name__}: {exc}") from exc
    except ConnectionClosed as exc:
        raise ConnectError(f"{label} closed during the handshake") from exc
    return WebSocketTransport(ws, label)
