"""A TCP fault proxy on loopback, in its own thread, switchable per direction at run time.

    with FaultProxy(target_port) as proxy:         # listens on 127.0.0.1:proxy.port
        proxy.set_mode("latency", ms=200)           # both directions
        proxy.set_mode("blackhole", direction="down")  # hold server->client bytes, no FIN/RST
        proxy.set_mode("pass")                       # held bytes flow again, in order
        proxy.set_mode("reset")                      # RST every live and every new connection
        proxy.set_mode("bandwidth", rate=1024)       # bytes per second
        proxy.set_mode("byte_limit", limit=500)      # cut the connection after 500 bytes
        proxy.set_mode("slow_close", ms=2000)        # a FIN is passed on 2 s late

"up" is client -> target, "down" is target -> client. Modes apply to live connections at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from tests.support.loop_thread import LoopThreadServer

Kind = Literal["pass", "latency", "blackhole", "reset", "bandwidth", "byte_limit", "slow_close"]
Direction = Literal["up", "down", "both"]


@dataclass(frozen=True, slots=True)
class Fault:
    kind: Kind = "pass"
    ms: float = 0.0
    rate: int = 0
    limit: int = 0


class _Cut(Exception):
    """The byte limit was reached: the connection is to be closed."""


def _rst(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None and not writer.transport.is_closing():
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class _Link:
    """One proxied connection: two pumps, each a reader feeding a queue and a writer."""

    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream = upstream
        self.reset = False

    def rst(self) -> None:
        self.reset = True
        _rst(self.client)
        _rst(self.upstream)


class FaultProxy(LoopThreadServer):
    """See the module docstring. `.connections` counts live proxied connections."""

    thread_name = "fault-proxy"

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        super().__init__()
        self.target_host = target_host
        self.target_port = target_port
        self.accepted = 0  # connections accepted since start
        self._modes: dict[str, Fault] = {"up": Fault(), "down": Fault()}
        self._links: set[_Link] = set()
        self._cond = threading.Condition()
        self._changed: asyncio.Event | None = None

    # -- public API --------------------------------------------------------------------------

    @property
    def connections(self) -> int:
        return len(self._links)

    def mode(self, direction: Literal["up", "down"]) -> Fault:
        return self._modes[direction]

    def set_mode(
        self,
        kind: Kind,
        *,
        direction: Direction = "both",
        ms: float = 0.0,
        rate: int = 0,
        limit: int = 0,
    ) -> None:
        """Switch a direction's fault; takes effect on live connections before returning."""
        fault = Fault(kind, ms, rate, limit)
        dirs = ("up", "down") if direction == "both" or kind == "reset" else (direction,)
        self._call_sync(self._apply, fault, dirs)

    def reset_all(self) -> None:
        """RST every live connection once; new connections are unaffected."""
        self._call_sync(self._reset_links)

    def wait_until(self, predicate: Callable[[FaultProxy], bool], timeout: float = 10.0) -> bool:
        """Block until `predicate(self)` holds (rechecked on every connection change)."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), timeout)

    # -- loop side ---------------------------------------------------------------------------

    def _call_sync(self, func: Callable[..., None], *args: Any) -> None:
        """Run `func` on the proxy's loop (directly when already there)."""
        if threading.current_thread() is self._thread:
            func(*args)
            return

        async def run() -> None:
            func(*args)

        self._call(run())

    def _apply(self, fault: Fault, dirs: tuple[str, ...]) -> None:
        for d in dirs:
            self._modes[d] = fault
        for d, mode in self._modes.items():
            if mode.kind == "reset" and fault.kind != "reset":
                self._modes[d] = Fault()  # reset is for both directions, and so is leaving it
        if fault.kind == "reset":
            self._reset_links()
        assert self._changed is not None
        self._changed.set()
        self._changed = asyncio.Event()

    def _reset_links(self) -> None:
        for link in list(self._links):
            link.rst()

    def _notify(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _on_loop_start(self) -> None:
        self._changed = asyncio.Event()

    async def _handle(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        if self._modes["up"].kind == "reset":
            _rst(c_writer)
            return
        try:
            u_reader, u_writer = await asyncio.open_connection(self.target_host, self.target_port)
        except OSError:
            _rst(c_writer)  # the target refused: the client sees its connection reset
            return
        link = _Link(c_writer, u_writer)
        self._links.add(link)
        self._notify()
        pumps = [
            asyncio.create_task(self._pump("up", link, c_reader, u_writer)),
            asyncio.create_task(self._pump("down", link, u_reader, c_writer)),
        ]
        try:
            await asyncio.gather(*pumps)
        except (_Cut, ConnectionError, OSError):
            pass
        finally:
            for pump in pumps:
                pump.cancel()
            self._links.discard(link)
            # Both closed before anything is waited on: a wait cut short (the proxy stopping
            # cancels its handlers) leaves neither to the garbage collector.
            for w in (c_writer, u_writer):
                w.close()
            await asyncio.gather(*pumps, return_exceptions=True)
            for w in (c_writer, u_writer):
                with contextlib.suppress(Exception):
                    await w.wait_closed()
            self._notify()

    async def _pump(
        self,
        d: Literal["up", "down"],
        link: _Link,
        src: asyncio.StreamReader,
        dst: asyncio.StreamWriter,
    ) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def read() -> None:
            try:
                while True:
                    data = await src.read(65536)
                    queue.put_nowait((loop.time(), data))
                    if not data:
                        return
            except ConnectionError:
                link.rst()  # a reset on one side is passed on as a reset

        reader = asyncio.create_task(read())
        sent = 0
        try:
            while True:
                arrived, data = await queue.get()
                await self._hold(d, arrived)
                fault = self._modes[d]
                if not data:
                    if fault.kind == "slow_close":
                        await asyncio.sleep(fault.ms / 1000)
                    if dst.can_write_eof() and not dst.transport.is_closing():
                        dst.write_eof()
                    return
                if fault.kind == "byte_limit" and sent + len(data) >= fault.limit:
                    dst.write(data[: max(0, fault.limit - sent)])
                    await dst.drain()
                    raise _Cut
                if fault.kind == "bandwidth" and fault.rate > 0:
                    await self._throttle(dst, data, fault.rate)
                else:
                    dst.write(data)
                    await dst.drain()
                sent += len(data)
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)

    async def _hold(self, d: str, arrived: float) -> None:
        """Waits out a blackhole and any latency; wakes at once when the mode changes."""
        loop = asyncio.get_running_loop()
        while True:
            fault = self._modes[d]
            changed = self._changed
            assert changed is not None
            if fault.kind == "blackhole":
                await changed.wait()
                continue
            if fault.kind == "latency":
                delay = arrived + fault.ms / 1000 - loop.time()
                if delay > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(changed.wait(), delay)
                    continue
            return

    @staticmethod
    async def _throttle(dst: asyncio.StreamWriter, data: bytes, rate: int) -> None:
        step = max(1, rate // 20)  # about 20 writes a second
        for i in range(0, len(data), step):
            piece = data[i : i + step]
            dst.write(piece)
            await dst.drain()
            await asyncio.sleep(len(piece) / rate)


_TCP_STATES = {"01": "ESTABLISHED", "06": "TIME_WAIT", "08": "CLOSE_WAIT", "0A": "LISTEN"}


def tcp_states(remote_port: int) -> list[str]:
    """States of this machine's TCP sockets whose peer is 127.0.0.1:`remote_port` (Linux only).

    Reads /proc/net/tcp and tcp6; "CLOSE_WAIT" means the peer closed and we never did.
    """
    states: list[str] = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == remote_port:
                states.append(_TCP_STATES.get(fields[3], fields[3]))
    return states


def port_of(url: str) -> int:
    """The TCP port of a `ws://host:port/path` URL."""
    return int(url.rsplit(":", 1)[1].split("/", maxsplit=1)[0])


@contextlib.contextmanager
def proxy_to(url: str) -> Iterator[tuple[FaultProxy, str]]:
    """A started FaultProxy in front of the gateway at `url`, and the URL that reaches the
    gateway through it; stopped on the way out."""
    proxy = FaultProxy(port_of(url)).start()
    try:
        yield proxy, f"ws://127.0.0.1:{proxy.port}/api/ws"
    finally:
        proxy.stop()
