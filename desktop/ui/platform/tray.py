"""The tray icon: unread count, close-to-tray, and a notification when a reply finishes unseen."""

from __future__ import annotations

import asyncio
import json
from typing import Protocol

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from desktop.ui.platform.resources import icon


class DesktopNotifier(Protocol):
    """Notifications shown by the desktop itself (freedesktop D-Bus), e.g. without a tray."""

    available: bool

    async def notify(self, title: str, body: str, tag: str) -> bool: ...


class Tray(QObject):
    """Wraps QSystemTrayIcon; every method is a no-op when the desktop has no tray.

    A finished reply is announced through `desktop` (the desktop's own notifications) when it
    is available, else through the tray icon's balloon; clicking either opens that chat.

    Signals:
        show_requested(): the user wants the window back.
        quit_requested(): Quit chosen from the tray menu.
        chat_requested(str, str): a notification was clicked: profile id, session key.
    """

    show_requested = Signal()
    quit_requested = Signal()
    chat_requested = Signal(str, str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.unread = 0
        self.notifications_enabled = True
        self.icon: QSystemTrayIcon | None = None
        self.notified: list[tuple[str, str]] = []
        self.desktop: DesktopNotifier | None = None
        self._balloon_tag = ""  # the chat the tray balloon on screen is about
        self._tasks: set[asyncio.Task[None]] = set()
        if not self.available():
            return
        self.icon = QSystemTrayIcon(icon("tray"), self)
        # The icon does not own its menu: kept here for as long as the icon shows it.
        self._menu = menu = QMenu()
        show = QAction("Show Hermes", menu)
        quit_ = QAction("Quit", menu)
        show.triggered.connect(self.show_requested)
        quit_.triggered.connect(self.quit_requested)
        menu.addAction(show)
        menu.addAction(quit_)
        self.icon.setContextMenu(menu)
        self.icon.activated.connect(self._on_icon_activated)
        self.icon.messageClicked.connect(self._on_icon_message_clicked)
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

    def set_notifications(self, enabled: bool) -> None:
        """Whether finished replies are announced at all (the user's preference)."""
        self.notifications_enabled = enabled

    def set_desktop_notifier(self, notifier: DesktopNotifier | None) -> None:
        """Announce through the desktop's own notifications when `notifier` is available."""
        self.desktop = notifier

    def reply_finished(
        self, title: str, text: str, profile_id: str = "", key: str = "", *, seen: bool = False
    ) -> bool:
        """Notify about a finished reply unless the user `seen` it (window focused); True when
        notified."""
        if not self.notifications_enabled or seen:
            return False
        preview = " ".join(text.split())[:140]
        self.notified.append((title, preview))
        tag = json.dumps([profile_id, key])
        if self.desktop is not None and self.desktop.available:
            task = asyncio.get_running_loop().create_task(self._notify(title, preview, tag))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            self._balloon(title, preview, tag)
        return True

    async def _notify(self, title: str, preview: str, tag: str) -> None:
        assert self.desktop is not None
        if not await self.desktop.notify(title, preview, tag):
            self._balloon(title, preview, tag)

    def _balloon(self, title: str, preview: str, tag: str) -> None:
        if self.icon is not None:
            self._balloon_tag = tag
            self.icon.showMessage(title, preview, QSystemTrayIcon.MessageIcon.Information, 5000)

    def open_chat(self, tag: str) -> None:
        """A notification with `tag` was clicked: bring that chat up."""
        try:
            profile_id, key = json.loads(tag)
        except (ValueError, TypeError):
            return
        self.show_requested.emit()
        self.chat_requested.emit(str(profile_id), str(key))

    def _on_icon_message_clicked(self) -> None:
        self.open_chat(self._balloon_tag)

    def _on_icon_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self.show_requested.emit()
