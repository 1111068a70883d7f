"""A private D-Bus session bus (Debian's dbus-daemon) and a fake freedesktop notification server.

The server runs on the test's asyncio loop (jeepney), records every Notify call and can
"click" a notification by sending ActionInvoked, as GNOME Shell does.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from jeepney import DBusAddress, HeaderFields, MatchRule, new_method_return, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.asyncio import Proxy, open_dbus_router

SERVICE = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"


@contextmanager
def session_bus() -> Iterator[str]:
    """Start a private session bus; yields its address (skips when dbus-daemon is missing)."""
    daemon = shutil.which("dbus-daemon")
    if daemon is None:
        pytest.skip("dbus-daemon is not installed (apt-get install dbus-daemon)")
    proc = subprocess.Popen(
        [daemon, "--session", "--nofork", "--print-address"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


@dataclass
class Shown:
    id: int
    app_name: str
    summary: str
    body: str
    actions: list[str]
    hints: dict[str, Any]


class FakeNotificationServer:
    """Owns org.freedesktop.Notifications on `address` and answers like a desktop shell."""

    def __init__(self, address: str) -> None:
        self._address = address
        self._cm: Any = None
        self._router: Any = None
        self._task: asyncio.Task[None] | None = None
        self.shown: list[Shown] = []
        self.changed = asyncio.Event()

    async def __aenter__(self) -> FakeNotificationServer:
        self._cm = open_dbus_router(self._address)
        self._router = await self._cm.__aenter__()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._filter = self._router.filter(
            MatchRule(type="method_call", interface=SERVICE), queue=queue
        )
        self._filter.__enter__()
        await Proxy(message_bus, self._router).RequestName(SERVICE)
        self._task = asyncio.get_running_loop().create_task(self._serve(queue))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._filter.__exit__(None, None, None)
        await self._cm.__aexit__(None, None, None)

    async def _serve(self, queue: asyncio.Queue[Any]) -> None:
        while True:
            msg = await queue.get()
            member = msg.header.fields.get(HeaderFields.member)
            if member == "GetCapabilities":
                await self._router.send(new_method_return(msg, "as", (["actions", "body"],)))
            elif member == "Notify":
                app, _replaces, _icon, summary, body, actions, hints, _timeout = msg.body
                shown = Shown(len(self.shown) + 1, app, summary, body, list(actions), hints)
                self.shown.append(shown)
                await self._router.send(new_method_return(msg, "u", (shown.id,)))
                self.changed.set()

    async def click(self, shown: Shown) -> None:
        """The user clicks the notification's body (the "default" action)."""
        address = DBusAddress(PATH, interface=SERVICE)
        await self._router.send(new_signal(address, "ActionInvoked", "us", (shown.id, "default")))
        await self._router.send(new_signal(address, "NotificationClosed", "uu", (shown.id, 2)))
