"""Wake-from-sleep notices from logind (PrepareForSleep on the system bus), through jeepney.

The link reconnects at once when the machine wakes (SystemEvents.woke_up). jeepney already
carries the app's other D-Bus traffic (notifications, the sleep inhibitor); QtDBus for this
one signal cost its libraries, libdbus and a connection thread (~1.1 MB resident). No Qt here:
it runs on the app's asyncio loop (qasync), pushed by the bus, no timer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

LOGIND = "org.freedesktop.login1"
LOGIND_PATH = "/org/freedesktop/login1"
LOGIND_MANAGER = "org.freedesktop.login1.Manager"
CALL_TIMEOUT = 5.0


class SleepWatch:
    """Calls `on_woke()` each time logind says the machine has resumed; `start()` is False
    (and nothing is watched) where there is no system bus or no logind."""

    def __init__(self, on_woke: Callable[[], None], *, bus: str = "SYSTEM") -> None:
        self._on_woke = on_woke
        self._bus = bus
        self._router_cm: Any = None
        self._router: Any = None
        self._filter: Any = None
        self._listener: asyncio.Task[None] | None = None

    async def start(self) -> bool:
        try:
            from jeepney import MatchRule
            from jeepney.bus_messages import message_bus
            from jeepney.io.asyncio import Proxy, open_dbus_router

            self._router_cm = open_dbus_router(self._bus)
            fields = {"interface": LOGIND_MANAGER, "member": "PrepareForSleep", "path": LOGIND_PATH}
            rule = MatchRule(type="signal", **fields)
            async with asyncio.timeout(CALL_TIMEOUT):
                self._router = await self._router_cm.__aenter__()
                # The bus delivers logind's own signals only; here they arrive from its unique
                # name, which jeepney's local filter (`rule`) would not match to the well-known.
                await Proxy(message_bus, self._router).AddMatch(
                    MatchRule(type="signal", sender=LOGIND, **fields)
                )
        except Exception as exc:  # no system bus, no permission: wakes are not reported
            log.info("logind sleep notices unavailable (%s)", str(exc) or type(exc).__name__)
            await self.aclose()
            return False
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._filter = self._router.filter(rule, queue=queue)
        self._filter.__enter__()
        self._listener = asyncio.get_running_loop().create_task(self._listen(queue))
        log.info("following logind's sleep notices")
        return True

    async def _listen(self, queue: asyncio.Queue[Any]) -> None:
        while True:
            message = await queue.get()
            if message.body and not message.body[0]:  # True: going to sleep
                self._on_woke()

    async def aclose(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.cancel()
            await asyncio.gather(listener, return_exceptions=True)
        if self._filter is not None:
            self._filter.__exit__(None, None, None)
            self._filter = None
        cm, self._router_cm = self._router_cm, None
        if cm is not None and self._router is not None:
            with contextlib.suppress(Exception):
                await cm.__aexit__(None, None, None)
        self._router = None
