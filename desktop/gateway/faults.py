"""JSON-RPC error codes the gateway answers with, and the exception that carries one to a reply."""

from __future__ import annotations

import sqlite3
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SESSION_NOT_FOUND = 4001
RESUME_TARGET_NOT_FOUND = 4007
STREAM_OWNED = 4091
# A result too large for one frame (the client would have to close its socket on it).
FRAME_TOO_LARGE = 4130

STREAM_OWNED_MESSAGE = "session stream is owned by another active client"


class RpcFault(Exception):
    """Raised by a method handler; becomes the `error` object of the reply."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def invalid_params(message: str) -> RpcFault:
    return RpcFault(INVALID_PARAMS, message)


def storage_fault(exc: sqlite3.Error) -> RpcFault:
    """A failed write or read of the gateway's own store, named for the user (nothing ran)."""
    name = getattr(exc, "sqlite_errorname", "")
    if name == "SQLITE_FULL":
        return RpcFault(
            INTERNAL_ERROR, "gateway storage full (disk is full)", {"reason": "storage_full"}
        )
    if name.startswith("SQLITE_READONLY"):
        return RpcFault(
            INTERNAL_ERROR, "gateway storage is read-only", {"reason": "storage_readonly"}
        )
    return RpcFault(INTERNAL_ERROR, f"gateway storage error ({exc})", {"reason": "storage_error"})
