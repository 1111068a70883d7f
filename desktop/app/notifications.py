"""Desktop notifications through the freedesktop D-Bus service (GNOME, KDE, ...), clickable.

Stock GNOME has no tray, so the tray's balloon never shows there; every Linux desktop has
`org.freedesktop.Notifications` on the session bus instead. Clicking a notification ("default"
action) calls `on_clicked(tag)` with the tag it was shown with. No Qt here: it runs on the app's
asyncio loop (qasync) through jeepney, which marshals the exact D-Bus types the spec requires
(QtDBus from Python cannot send the `u` replaces_id).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

SERVICE = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
CALL_TIMEOUT = 5.0


class FreedesktopNotifier:
    """Shows notifications on the session bus; `available` once `start()` found the service."""

    def __init__(
        self, app_name: str, on_clicked: Callable[[str], None], *, bus: str = "SESSION"
    ) -> None:
        self._app_name = app_name
        self._on_clicked = on_clicked
        self._bus = bus
        self._router_cm: Any = None
        self._router: Any = None
        self._listener: asyncio.Task[None] | None = None
        self._tags: dict[int, str] = {}  # notification id -> tag, until it is closed
        self.available = False
        self.clickable = False  # the server supports actions

    async def start(self) -> bool:
        """Connect and check the service; False (and the tray is used) when there is none."""
        try:
            from jeepney import DBusAddress, MatchRule, new_method_call
            from jeepney.bus_messages import message_bus
            from jeepney.io.asyncio import Proxy, open_dbus_router

            self._router_cm = open_dbus_router(self._bus)
            async with asyncio.timeout(CALL_TIMEOUT):
                router = await self._router_cm.__aenter__()
                self._router = router
                address = DBusAddress(PATH, bus_name=SERVICE, interface=SERVICE)
                reply = await router.send_and_get_reply(new_method_call(address, "GetCapabilities"))
                caps = _body(reply)[0]
                rule = MatchRule(type="signal", interface=SERVICE, path=PATH)
                await Proxy(message_bus, router).AddMatch(rule)
        except Exception as exc:  # no bus, no service, a broken one: the tray takes over
            log.info("no desktop notifications over D-Bus (%s); using the tray", _why(exc))
            await self.aclose()
            return False
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._filter = router.filter(rule, queue=queue)
        self._filter.__enter__()
        self._listener = asyncio.get_running_loop().create_task(self._listen(queue))
        self.clickable = "actions" in caps
        self.available = True
        return True

    async def notify(self, title: str, body: str, tag: str) -> bool:
        """Show one notification; False when the service failed (the caller falls back)."""
        if not self.available:
            return False
        from jeepney import DBusAddress, new_method_call

        address = DBusAddress(PATH, bus_name=SERVICE, interface=SERVICE)
        hints = {"desktop-entry": ("s", self._app_name), "category": ("s", "im.received")}
        actions = ["default", "Open chat"] if self.clickable else []
        message = new_method_call(
            address,
            "Notify",
            "susssasa{sv}i",
            (self._app_name, 0, self._app_name, title, body, actions, hints, -1),
        )
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                reply = await self._router.send_and_get_reply(message)
            (notification_id,) = _body(reply)
        except Exception as exc:
            log.warning("desktop notification failed (%s); using the tray", _why(exc))
            return False
        self._tags[int(notification_id)] = tag
        return True

    async def _listen(self, queue: asyncio.Queue[Any]) -> None:
        from jeepney import HeaderFields

        while True:
            message = await queue.get()
            member = message.header.fields.get(HeaderFields.member)
            if member == "ActionInvoked":
                notification_id, action = message.body
                tag = self._tags.get(int(notification_id))
                if tag is not None and action == "default":
                    self._on_clicked(tag)
            elif member == "NotificationClosed":
                self._tags.pop(int(message.body[0]), None)

    async def aclose(self) -> None:
        self.available = False
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.cancel()
            await asyncio.gather(listener, return_exceptions=True)
        cm, self._router_cm = self._router_cm, None
        if cm is not None and self._router is not None:
            with contextlib.suppress(Exception):
                await cm.__aexit__(None, None, None)
        self._router = None


def _body(reply: Any) -> tuple[Any, ...]:
    from jeepney import MessageType

    if reply.header.message_type is MessageType.error:
        raise RuntimeError(f"D-Bus error: {reply.body[0] if reply.body else 'unknown'}")
    return tuple(reply.body)


def _why(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
