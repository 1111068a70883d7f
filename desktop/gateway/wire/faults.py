"""The exception that carries a JSON-RPC error code (desktop.common.codes) to a reply."""

from __future__ import annotations

import sqlite3
from typing import Any

from desktop.common.codes import INTERNAL_ERROR, INVALID_PARAMS

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
