"""Keeps the computer from sleeping while a reply runs, and only then (a logind inhibitor).

`KeepAwake` decides: it holds one sleep inhibitor while any online profile has a turn running,
lets it go when the last one ends (completed, failed, stopped), when the connection drops, when
the setting is turned off, when the app quits, and at the latest after a hard cap (2 h by
default: a turn stuck for hours must not keep a laptop awake in a bag). `LogindInhibitor` is
the D-Bus boundary: `org.freedesktop.login1.Manager.Inhibit` returns a file descriptor that
holds the lock until it is closed. No Qt here: it runs on the app's asyncio loop (qasync)
through jeepney, as the notifications do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any, Protocol

from desktop.common.clock import Clock, TimerHandle
from desktop.core.listeners import BackendListener
from desktop.core.models import ConnectionState, ConnectionStatus

log = logging.getLogger(__name__)

LOGIND = "org.freedesktop.login1"
LOGIND_PATH = "/org/freedesktop/login1"
LOGIND_MANAGER = "org.freedesktop.login1.Manager"
WHAT = "sleep:idle"
WHO = "hermes-qt"
WHY = "A reply is running"
DEFAULT_CAP = 2 * 3600.0
CALL_TIMEOUT = 5.0


class Hold(Protocol):
    """A taken inhibitor; `release()` lets the computer sleep again (idempotent)."""

    def release(self) -> None: ...


class SleepInhibitor(Protocol):
    """Takes a sleep inhibitor; None when the system has none to give (no logind, refused)."""

    async def inhibit(self) -> Hold | None: ...


class _FdHold:
    """logind's lock: it lasts while the returned descriptor is open."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


class LogindInhibitor:
    """`Inhibit("sleep:idle", "hermes-qt", "A reply is running", "block")` on the system bus.

    One short-lived connection per call, in a worker thread: jeepney passes descriptors only
    on its blocking connection (not the asyncio one). The descriptor outlives the connection,
    and no bus connection stays open between turns.
    """

    def __init__(self, bus: str = "SYSTEM") -> None:
        self._bus = bus
        self._warned = False

    async def inhibit(self) -> Hold | None:
        try:
            fd = await asyncio.to_thread(self._inhibit_blocking)
        except Exception as exc:  # no system bus, no logind, refused by policy: stay as we are
            if not self._warned:
                self._warned = True
                log.info("cannot keep the computer awake during replies (%s)", _why(exc))
            return None
        return _FdHold(fd)

    def _inhibit_blocking(self) -> int:
        from jeepney import DBusAddress, MessageType, new_method_call
        from jeepney.io.blocking import open_dbus_connection

        address = DBusAddress(LOGIND_PATH, bus_name=LOGIND, interface=LOGIND_MANAGER)
        message = new_method_call(address, "Inhibit", "ssss", (WHAT, WHO, WHY, "block"))
        with open_dbus_connection(self._bus, enable_fds=True, auth_timeout=CALL_TIMEOUT) as conn:
            reply = conn.send_and_get_reply(message, timeout=CALL_TIMEOUT)
        if reply.header.message_type is MessageType.error:
            raise RuntimeError(str(reply.body[0]) if reply.body else "D-Bus error")
        descriptor: Any = reply.body[0]
        return int(descriptor.to_raw_fd())


class KeepAwake:
    """Holds the sleep inhibitor while a turn runs on an online profile (see the module doc).

    Each profile's controller reports through `listener(profile_id)`; `forget` drops a
    closed profile. Taking is asynchronous: one worker brings the hold in line with what is
    wanted, so a turn that ends while the inhibitor is being taken releases it right after.
    """

    def __init__(
        self,
        inhibitor: SleepInhibitor,
        clock: Clock,
        *,
        cap: float = DEFAULT_CAP,
        enabled: bool = True,
    ) -> None:
        self._inhibitor = inhibitor
        self._clock = clock
        self._cap = cap
        self._enabled = enabled
        self._running: dict[str, set[str]] = {}
        self._online: dict[str, bool] = {}
        self._hold: Hold | None = None
        self._capped = False  # the cap fired: no new hold until every turn has ended
        self._cap_timer: TimerHandle | None = None
        self._worker: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def held(self) -> bool:
        return self._hold is not None

    def listener(self, profile_id: str) -> BackendListener:
        return _ProfileWatch(self, profile_id)

    def forget(self, profile_id: str) -> None:
        self._running.pop(profile_id, None)
        self._online.pop(profile_id, None)
        self._sync()

    def set_enabled(self, enabled: bool) -> None:
        self._enabled = enabled
        self._sync()

    def running(self, profile_id: str, key: str, running: bool) -> None:
        keys = self._running.setdefault(profile_id, set())
        if running:
            keys.add(key)
        else:
            keys.discard(key)
        self._sync()

    def renamed(self, profile_id: str, old_key: str, new_key: str) -> None:
        keys = self._running.get(profile_id)
        if keys is not None and old_key in keys:
            keys.discard(old_key)
            keys.add(new_key)

    def status(self, profile_id: str, status: ConnectionStatus) -> None:
        self._online[profile_id] = status.state is ConnectionState.ONLINE
        self._sync()

    def _busy(self) -> bool:
        return any(keys and self._online.get(pid, False) for pid, keys in self._running.items())

    def _wanted(self) -> bool:
        if not self._busy():
            self._capped = False  # every turn ended: the next one may hold again
        return self._enabled and not self._closed and not self._capped and self._busy()

    def _sync(self) -> None:
        if not self._wanted():
            self._let_go()  # releasing needs no I/O: at once
        elif self._hold is None and self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._take())

    async def _take(self) -> None:
        try:
            hold = await self._inhibitor.inhibit()
        finally:
            self._worker = None
        if hold is None:
            return
        if not self._wanted():
            hold.release()  # the turn ended (or the app closed) while it was being taken
            return
        self._hold = hold
        self._cap_timer = self._clock.call_later(self._cap, self._on_cap)
        log.debug("keeping the computer awake while a reply runs")

    def _on_cap(self) -> None:
        self._cap_timer = None
        log.info("a reply ran for %.0f min: letting the computer sleep again", self._cap / 60)
        self._capped = True
        self._let_go()

    def _let_go(self) -> None:
        if self._cap_timer is not None:
            self._cap_timer.cancel()
            self._cap_timer = None
        hold, self._hold = self._hold, None
        if hold is not None:
            hold.release()

    async def aclose(self) -> None:
        self._closed = True
        worker = self._worker
        if worker is not None:
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)
        self._let_go()


class _ProfileWatch(BackendListener):
    """One profile's turns and connection, as `KeepAwake` needs them."""

    def __init__(self, owner: KeepAwake, profile_id: str) -> None:
        self._owner = owner
        self._pid = profile_id

    def on_running(self, key: str, running: bool) -> None:
        self._owner.running(self._pid, key, running)

    def on_status(self, status: ConnectionStatus) -> None:
        self._owner.status(self._pid, status)

    def on_session_key_changed(self, old_key: str, new_key: str) -> None:
        self._owner.renamed(self._pid, old_key, new_key)


def _why(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
