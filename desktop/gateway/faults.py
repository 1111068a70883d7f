"""JSON-RPC error codes the gateway answers with, and the exception that carries one to a reply."""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SESSION_NOT_FOUND = 4001
RESUME_TARGET_NOT_FOUND = 4007
STREAM_OWNED = 4091

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
