"""The client's error tree: one base class, one `is_retryable()` deciding retry versus fatal.

    HermesQtError                 every error the core raises to its callers
      GatewayError                talking to a gateway (this module: socket, call, reply)
      StorageError                the local store (storage.py; ExportError in export.py)
      AttachmentError             a file the user attached (attachments.py)
      OutboxError                 a request the prompt's state does not allow (outbox.py)

Catching `GatewayError` never swallows a disk or attachment error as a connection one.
"""

from __future__ import annotations

from typing import Any


class HermesQtError(Exception):
    """Base of every error the core raises to its callers."""

    retryable: bool = True

    def is_retryable(self) -> bool:
        """True when trying again later (new socket, backoff) may succeed."""
        return self.retryable


class GatewayError(HermesQtError):
    """Talking to a gateway failed: opening the socket, a call, or the gateway's answer."""


class RpcError(GatewayError):
    """The gateway answered a call with a JSON-RPC error object."""

    retryable = False

    def __init__(self, code: int, message: str, data: Any = None, *, method: str = "") -> None:
        super().__init__(f"{method + ': ' if method else ''}{message} ({code})")
        self.code = code
        self.message = message
        self.data = data
        self.method = method


class BranchError(GatewayError):
    """A branch the gateway could not make, or made in a way this client cannot keep."""


class BranchUnsupported(BranchError):
    """This gateway cannot make a branch this client can keep, whatever the chat: `limit` says
    why, for the menu that then offers Branch from here greyed."""

    def __init__(self, message: str, limit: str) -> None:
        super().__init__(message)
        self.limit = limit


# WebSocket close code for a frame over the receiver's limit (websockets closes with it).
CLOSE_TOO_BIG = 1009


class ConnectionLostError(GatewayError):
    """The socket a call was pending on was invalidated; the call's outcome is unknown."""

    def __init__(self, reason: str, *, generation: int = 0, code: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.generation = generation
        self.code = code

    @property
    def frame_too_large(self) -> bool:
        """The socket died because an inbound frame exceeded our limit (possibly this reply)."""
        return self.code == CLOSE_TOO_BIG


class NotConnectedError(GatewayError):
    """A call was made while no socket is open; nothing was sent."""


class CallTimeoutError(GatewayError):
    """No reply arrived within the call's timeout; the call's outcome is unknown."""


class ConnectError(GatewayError):
    """Opening a socket failed (refused, DNS, timeout, 5xx on the upgrade, ...).

    `silent`: the peer said nothing at all in time (a timeout, not a refusal); for a gateway
    child on this computer that means the process hangs.
    """

    def __init__(
        self,
        reason: str,
        *,
        retryable: bool = True,
        status: int | None = None,
        silent: bool = False,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.status = status
        self.silent = silent


# Why a live link was given up when the gateway went quiet past the liveness deadline.
DEADLINE_PASSED = "heartbeat deadline passed"
# Why a new link was given up when the gateway accepted it but never said gateway.ready.
READY_TIMED_OUT = "timed out waiting for gateway.ready"


class AuthError(ConnectError):
    """The gateway refused our credentials (HTTP 401/403 on the upgrade, auth close code)."""

    def __init__(self, reason: str, *, status: int | None = None) -> None:
        super().__init__(reason, retryable=False, status=status)


class ProtocolError(ConnectError):
    """The peer does not speak a protocol version we understand."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, retryable=False)


class InsecureTransportError(ConnectError):
    """A token would go in clear text to a non-loopback host the user did not allow."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, retryable=False)


# WebSocket close codes that mean "your credentials were refused": never retry after these.
AUTH_CLOSE_CODES: frozenset[int] = frozenset({4401, 4403, 1008})


class TransportClosedError(GatewayError):
    """The socket closed under us (peer close, reset, network); carries the close code, if any."""

    def __init__(self, reason: str, *, code: int | None = None) -> None:
        super().__init__(f"{reason} ({code})" if code is not None else reason)
        self.reason = reason
        self.code = code
        self.retryable = code not in AUTH_CLOSE_CODES


class StorageError(HermesQtError):
    """The local store could not read or write; the caller keeps its in-memory value."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class StorageFullError(StorageError):
    """The disk (or the database's size cap) is full; frees up when the user makes room."""


class StorageReadOnlyError(StorageError):
    """The data dir or database file cannot be written."""
