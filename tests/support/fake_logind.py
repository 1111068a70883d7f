"""A fake logind on a private bus: answers Manager.Inhibit with a pipe and sees it closed.

Real logind keeps an inhibitor while any copy of the descriptor it handed out is open; this
one hands out a pipe's write end and keeps the read end: the lock is released once the read
end sees end-of-file (the client closed its copy). It serves from a thread on jeepney's
blocking connection, the only one of jeepney's that passes descriptors.
"""

from __future__ import annotations

import os
import queue
import select
import threading
from dataclasses import dataclass
from typing import Any

from jeepney import DBusAddress, HeaderFields, MessageType, new_error, new_method_return, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import Proxy, open_dbus_connection

SERVICE = "org.freedesktop.login1"
MANAGER = "org.freedesktop.login1.Manager"


@dataclass
class Lock:
    what: str
    who: str
    why: str
    mode: str
    read_end: int

    @property
    def released(self) -> bool:
        """Every copy of the handed-out descriptor is closed."""
        readable, _, _ = select.select([self.read_end], [], [], 0)
        return bool(readable) and os.read(self.read_end, 64) == b""


class FakeLogind:
    """Owns org.freedesktop.login1 on `address`; `locks` lists every Inhibit call."""

    def __init__(self, address: str, *, refuse: bool = False) -> None:
        self._address = address
        self._refuse = refuse
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn: Any = None
        self.locks: list[Lock] = []
        self._signals: queue.Queue[Any] = queue.Queue()

    @property
    def held(self) -> list[Lock]:
        return [lock for lock in self.locks if not lock.released]

    def __enter__(self) -> FakeLogind:
        self._conn = open_dbus_connection(self._address, enable_fds=True)
        Proxy(message_bus, self._conn).RequestName(SERVICE)
        self._thread = threading.Thread(target=self._serve, name="fake-logind", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        self._conn.close()
        for lock in self.locks:
            os.close(lock.read_end)

    def announce_sleep(self, going_to_sleep: bool) -> None:
        """Emit Manager.PrepareForSleep(going_to_sleep), as logind does around a suspend."""
        manager = DBusAddress("/org/freedesktop/login1", interface=MANAGER)
        self._signals.put(new_signal(manager, "PrepareForSleep", "b", (going_to_sleep,)))

    def _serve(self) -> None:
        while not self._stop.is_set():
            while not self._signals.empty():  # sent from this thread, the connection's only user
                self._conn.send(self._signals.get())
            try:
                msg = self._conn.receive(timeout=0.05)
            except TimeoutError:
                continue
            if msg.header.message_type is not MessageType.method_call:
                continue
            if msg.header.fields.get(HeaderFields.member) != "Inhibit":
                continue
            if self._refuse:
                error = "org.freedesktop.DBus.Error.AccessDenied"
                self._conn.send(new_error(msg, error, "s", ("Permission denied",)))
                continue
            read_end, write_end = os.pipe()
            try:
                self._conn.send(new_method_return(msg, "h", (write_end,)))
            finally:
                os.close(write_end)  # the client holds the only copy now
            self.locks.append(Lock(*msg.body, read_end=read_end))
