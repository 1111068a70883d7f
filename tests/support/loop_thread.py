"""A loopback TCP server on its own asyncio loop in a thread, for fakes that sync tests, async
tests and subprocesses can all reach. Subclasses implement `_handle(reader, writer)`."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, Self, TypeVar

T = TypeVar("T")


class LoopThreadServer:
    """Start/stop, context manager, and `_call` to run a coroutine on the server's loop."""

    thread_name = "loop-thread-server"

    def __init__(self) -> None:
        self.port = 0  # set before start() to listen on a fixed port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._startup_error: BaseException | None = None

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()
        if not self._ready.wait(10) or not self.port:
            raise RuntimeError(f"{self.thread_name} failed to start") from self._startup_error
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- loop side ---------------------------------------------------------------------------

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the server's loop and wait for its result (from any other thread)."""
        assert self._loop is not None, f"{self.thread_name} not started"
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    def _on_loop_start(self) -> None:
        """Create loop-bound state (events) before the first connection; for subclasses."""

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:  # surfaced to start() instead of dying silently
            self._startup_error = exc
        finally:
            self._ready.set()
            _close_leftovers(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        self._on_loop_start()
        tasks: set[asyncio.Task[None]] = set()

        def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.get_running_loop().create_task(self._handle(reader, writer))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            # A handler closes its connection when it ends; one cancelled before it began (a
            # connection accepted as the server stops) never ran to close it: closed here.
            task.add_done_callback(lambda _task: writer.close())

        server = await asyncio.start_server(on_client, "127.0.0.1", self.port)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await close_server(server)  # (every connection it accepted has reached on_client)
            while tasks:
                for task in list(tasks):
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            await server.wait_closed()


async def close_server(server: asyncio.Server) -> None:
    """`server.close()` once the connections it accepted have their transports.

    Python 3.11 builds an accepted connection's transport a turn after accepting it, and one
    built after `close()` fails (an assertion in Server._attach), leaving its socket to the
    garbage collector. So accepting stops first, and the server closes a few turns later, once
    each such connection has been handed to the server's callback."""
    loop = asyncio.get_running_loop()
    for sock in server.sockets:
        loop.remove_reader(sock.fileno())
    for _ in range(3):
        await asyncio.sleep(0)
    server.close()


def _close_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    """What is still open on a server's loop as it stops goes now, not to the garbage collector
    later (whose ResourceWarning fails whichever test is running then): tasks are cancelled
    (an accept still being set up, a handler's helper) and every socket the loop still holds
    is aborted (an accepted one whose handler never began, an upstream one of a handler cut
    short). The selector loop keeps its transports by file descriptor; no public API lists them."""
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
    transports = list(getattr(loop, "_transports", {}).values())
    for transport in transports:
        if not transport.is_closing():
            transport.abort()
    if transports:
        loop.run_until_complete(asyncio.sleep(0))  # aborted: their sockets close next turn
