"""Forwards the OS's network-change and wake-from-sleep notices as Qt signals (no polling)."""

from __future__ import annotations

import logging
import sys

from PySide6.QtCore import QObject, Signal, Slot

log = logging.getLogger(__name__)

_LOGIND = ("org.freedesktop.login1", "/org/freedesktop/login1", "org.freedesktop.login1.Manager")


class SystemEvents(QObject):
    """Listens to QNetworkInformation and (on Linux) logind's PrepareForSleep.

    Both are pushed by the OS; nothing here runs a timer, so an idle app stays idle.

    Signals:
        network_changed(): reachability or the network interface changed.
        woke_up(): the machine resumed from sleep.
    """

    network_changed = Signal()
    woke_up = Signal()

    def __init__(
        self, parent: QObject | None = None, *, watch_network: bool = True, watch_sleep: bool = True
    ) -> None:
        super().__init__(parent)
        self._reachability: object | None = None
        self._network_watched = False
        self._sleep_watched = False
        if watch_network:
            self.watch_network()
        if watch_sleep:
            self.watch_sleep()

    def watch_sleep(self) -> None:
        """Follow wake-ups from now on (once; Linux: logind, on the system bus). The app calls
        this once its window is painted: connecting to the bus is not worth a later window."""
        if self._sleep_watched:
            return
        self._sleep_watched = True
        if sys.platform.startswith("linux"):
            self._watch_logind()

    def watch_network(self) -> None:
        """Follow network changes from now on (once). Only links off this machine need them:
        loading Qt's network-information backend costs ~4 MB, so the app calls this when it
        has a remote profile."""
        if self._network_watched:
            return
        self._network_watched = True
        try:
            from PySide6.QtNetwork import QNetworkInformation
        except ImportError:  # pragma: no cover - QtNetwork ships with Essentials
            return
        if not QNetworkInformation.loadDefaultBackend():
            log.info("no network-information backend: network changes are not reported")
            return
        # Typed non-None by the stubs, None when the backend failed to come up.
        info: QNetworkInformation | None = QNetworkInformation.instance()
        if info is None:
            return
        self._reachability = info.reachability()
        info.reachabilityChanged.connect(self.on_network_reachability_changed)
        if hasattr(info, "transportMediumChanged"):
            info.transportMediumChanged.connect(lambda _m: self.network_changed.emit())

    @Slot(object)
    def on_network_reachability_changed(self, reachability: object) -> None:
        if reachability != self._reachability:
            self._reachability = reachability
            self.network_changed.emit()

    def _watch_logind(self) -> None:
        try:
            from PySide6.QtDBus import QDBusConnection
        except ImportError:  # pragma: no cover
            return
        bus = QDBusConnection.systemBus()
        if not bus.isConnected():
            return
        service, path, interface = _LOGIND
        # PySide6's stubs lack the overload with a slot signature string (the one Qt documents).
        ok = bus.connect(  # type: ignore[call-overload]
            service, path, interface, "PrepareForSleep", self, "on_prepare_for_sleep(bool)"
        )
        if not ok:
            log.info("logind sleep notices unavailable")

    @Slot(bool)
    def on_prepare_for_sleep(self, going_to_sleep: bool) -> None:
        """logind says the machine sleeps (True) or has just woken (False)."""
        if not going_to_sleep:
            self.woke_up.emit()
