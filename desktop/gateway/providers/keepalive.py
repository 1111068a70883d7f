"""TCP keepalive socket options for provider connections, per platform."""

from __future__ import annotations

import socket
import sys

SocketOption = tuple[int, int, int]

KEEPIDLE_S = 30
KEEPINTVL_S = 10
KEEPCNT = 3
USER_TIMEOUT_MS = 30_000
# macOS names the idle time TCP_KEEPALIVE; older Pythons do not export the constant.
_DARWIN_TCP_KEEPALIVE = 0x10


def keepalive_options(
    *,
    idle: int = KEEPIDLE_S,
    interval: int = KEEPINTVL_S,
    count: int = KEEPCNT,
    user_timeout_ms: int = USER_TIMEOUT_MS,
    platform: str = sys.platform,
) -> list[SocketOption]:
    """Options for `httpx.AsyncHTTPTransport(socket_options=...)`.

    Keepalive probes find a dead idle peer in idle + interval * count seconds (60 s); the user
    timeout (Linux) fails a connection whose written data stays unacknowledged that long, which
    keepalive alone never does.
    """
    tcp = socket.IPPROTO_TCP
    options: list[SocketOption] = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    if hasattr(socket, "TCP_KEEPIDLE") and platform != "darwin":
        options.append((tcp, socket.TCP_KEEPIDLE, idle))
    elif platform == "darwin":
        options.append((tcp, getattr(socket, "TCP_KEEPALIVE", _DARWIN_TCP_KEEPALIVE), idle))
    if hasattr(socket, "TCP_KEEPINTVL"):
        options.append((tcp, socket.TCP_KEEPINTVL, interval))
    if hasattr(socket, "TCP_KEEPCNT"):
        options.append((tcp, socket.TCP_KEEPCNT, count))
    if platform.startswith("linux") and hasattr(socket, "TCP_USER_TIMEOUT"):
        options.append((tcp, socket.TCP_USER_TIMEOUT, user_timeout_ms))
    return options
