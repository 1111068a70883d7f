"""Forwards the OS's network-change and wake-from-sleep notices as Qt signals (no polling)."""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, Signal, Slot

log = logging.getLogger(__name__)


class SystemEvents(QObject):
    """Listens to QNetworkInformation; hears logind's PrepareForSleep from the app (on Linux,
    desktop/app/sleep_watch.py calls `on_prepare_for_sleep`).

    Both are pushed by the OS; nothing here runs a timer, so an idle app stays idle.

    Signals:
        network_changed(): reachability or the network interface changed.
        woke_up(): the machine resumed from sleep.
    """

    network_changed = Signal()
    woke_up = Signal()

    def __init__(self, parent: QObject | None = None, *, watch_network: bool = True) -> None:
        super().__init__(parent)
        self._reachability: object | None = None
        self._network_watched = False
        if watch_network:
            self.watch_network()

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

    @Slot(bool)
    def on_prepare_for_sleep(self, going_to_sleep: bool) -> None:
        """logind says the machine sleeps (True) or has just woken (False)."""
        if not going_to_sleep:
            self.woke_up.emit()
