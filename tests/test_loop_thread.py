"""The test servers' own teardown: a connection accepted as a server stops is closed, not left
open to the garbage collector (whose ResourceWarning fails whichever later test runs then)."""

from __future__ import annotations

import asyncio
import socket

from tests.support.loop_thread import close_server


async def test_a_connection_accepted_just_before_the_server_closes_is_still_served() -> None:
    served: list[bool] = []

    def hang_up(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.append(True)
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
        # Two turns: in the second the listening socket is read and the connection accepted;
        # its transport is built in the third, when the server is already closing. (On
        # Python 3.11, after a bare `server.close()` that build fails and the socket stays open.)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        await close_server(server)
        assert served == [True], "the connection never reached its handler"
        await server.wait_closed()
        assert client.recv(1) == b"", "the server's end was not closed"
