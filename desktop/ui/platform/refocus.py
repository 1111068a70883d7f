"""The window takes the keyboard back when one of its dialogs closes.

On an X display without a window manager (a bare X server, some kiosk sessions) nothing gives
the window the input focus back when a dialog closes: typed text still reaches the focused
widget, but Qt matches window shortcuts only in the active window, so Ctrl+K or Ctrl+N did
nothing while the typing went on into the chat still open. With a window manager the manager
activates the window again and this does nothing.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtGui import QGuiApplication, QWindow
from PySide6.QtWidgets import QApplication, QWidget
from shiboken6 import isValid


class RefocusAfterDialogs(QObject):
    """Activates `window` again when a dialog of the app (a window with a transient parent)
    that had the focus closes and leaves no window of the app active."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self._window = window
        self._watched: set[int] = set()
        app = QGuiApplication.instance()
        if isinstance(app, QGuiApplication):
            app.focusWindowChanged.connect(self._on_focus_window_changed)

    def _on_focus_window_changed(self, now: QWindow | None) -> None:
        if now is None or now.transientParent() is None or id(now) in self._watched:
            return
        # Qt says nothing when the focus window closes (it is just forgotten): its own
        # visibility says when.
        self._watched.add(id(now))
        key = id(now)
        now.visibleChanged.connect(self._on_dialog_visible_changed)
        now.destroyed.connect(lambda *_: self._watched.discard(key))

    def _on_dialog_visible_changed(self, visible: bool) -> None:
        if not visible:
            QTimer.singleShot(0, self._refocus)

    def _refocus(self) -> None:
        window = self._window
        if not isValid(window) or QApplication.activeWindow() is not None:
            return  # a window manager (or the user) has already given a window the focus
        if window.isVisible() and not window.windowState() & Qt.WindowState.WindowMinimized:
            window.activateWindow()
