"""The tray icon: unread count, close-to-tray, and a notification when a reply finishes unseen."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QSystemTrayIcon, QWidget

from desktop.ui.resources import icon


class Tray(QObject):
    """Wraps QSystemTrayIcon; every method is a no-op when the desktop has no tray.

    Signals:
        show_requested(): the user wants the window back.
        quit_requested(): Quit chosen from the tray menu.
    """

    show_requested = Signal()
    quit_requested = Signal()

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self._window = window
        self.unread = 0
        self.notifications_enabled = True
        self.icon: QSystemTrayIcon | None = None
        self.notified: list[tuple[str, str]] = []
        if not self.available():
            return
        self.icon = QSystemTrayIcon(icon("tray"), self)
        menu = QMenu(window)
        show = QAction("Show Hermes", menu)
        quit_ = QAction("Quit", menu)
        show.triggered.connect(self.show_requested)
        quit_.triggered.connect(self.quit_requested)
        menu.addAction(show)
        menu.addAction(quit_)
        self.icon.setContextMenu(menu)
        self.icon.activated.connect(self._on_icon_activated)
        self.icon.setToolTip("Hermes")
        self.icon.show()

    @classmethod
    def available(cls) -> bool:
        """Whether the desktop offers a system tray (patchable in tests)."""
        return bool(QSystemTrayIcon.isSystemTrayAvailable())

    @property
    def can_hide_to_tray(self) -> bool:
        """Closing the window may hide it only when there is a tray to come back from."""
        return self.icon is not None

    def set_unread(self, count: int) -> None:
        """Show the unread count in the tooltip."""
        self.unread = count
        if self.icon is not None:
            self.icon.setToolTip(f"Hermes — {count} unread" if count else "Hermes")

    def reply_finished(self, title: str, text: str) -> bool:
        """Notify about a finished reply if the window is not focused; True when notified."""
        if not self.notifications_enabled or self._window.isActiveWindow():
            return False
        preview = " ".join(text.split())[:140]
        self.notified.append((title, preview))
        if self.icon is not None:
            self.icon.showMessage(title, preview, QSystemTrayIcon.MessageIcon.Information, 5000)
        return True

    def _on_icon_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self.show_requested.emit()
