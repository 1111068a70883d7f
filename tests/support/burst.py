"""Pipelined request bursts: N WebSocket frames sent in ONE socket write, then read back."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import State
from websockets.uri import parse_uri


@dataclass
class BurstResult:
    answered: set[Any] = field(default_factory=set)
    errors: int = 0
    events: int = 0
    closed: bool = False
    close_code: int | None = None
    bytes_written: int = 0


async def pipelined_burst(
    url: str, token: str, requests: list[dict[str, Any]], *, timeout: float = 60.0
) -> BurstResult:
    """Open a socket, write every request in a single `write()`, read until each id is answered
    (or the socket closes, or `timeout`)."""
    parts = urlsplit(url)
    proto = ClientProtocol(parse_uri(f"{url}?token={token}"), max_size=None)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    result = BurstResult()
    wanted = {r["id"] for r in requests if "id" in r}
    try:
        proto.send_request(proto.connect())
        writer.write(b"".join(proto.data_to_send()))
        while proto.state is State.CONNECTING:
            data = await asyncio.wait_for(reader.read(65536), timeout)
            if not data:
                raise ConnectionError("closed during the handshake")
            proto.receive_data(data)
            for event in proto.events_received():
                if isinstance(event, Response) and event.status_code != 101:
                    raise ConnectionError(f"upgrade refused: {event.status_code}")
                if isinstance(event, Frame):
                    _count(event, result)
        for request in requests:
            proto.send_text(json.dumps(request).encode())
        burst = b"".join(proto.data_to_send())
        result.bytes_written = len(burst)
        writer.write(burst)  # one write: the whole burst reaches the gateway at once
        async with asyncio.timeout(timeout):
            while not wanted <= result.answered:
                data = await reader.read(262144)
                if not data:
                    break
                proto.receive_data(data)
                for event in proto.events_received():
                    if isinstance(event, Frame):
                        _count(event, result)
                for out in proto.data_to_send():  # pongs, close replies
                    if out:
                        writer.write(out)
                if proto.state is State.CLOSED or proto.close_rcvd is not None:
                    result.closed = True
                    result.close_code = proto.close_rcvd.code if proto.close_rcvd else None
                    break
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass
    return result


def _count(frame: Frame, result: BurstResult) -> None:
    if frame.opcode is not Opcode.TEXT:
        return
    msg = json.loads(frame.data)
    if msg.get("method") == "event":
        result.events += 1
    elif "id" in msg:
        result.answered.add(msg["id"])
        if "error" in msg:
            result.errors += 1
