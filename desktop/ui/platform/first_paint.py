"""Work left until a window has been painted once: what start-up does after the user sees it."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget

# A window the window manager never exposes (another workspace, minimized) is never painted:
# the work runs this long after `show()` all the same.
FALLBACK_MS = 2000


class AfterFirstPaint(QObject):
    """Runs callbacks once, in order, right after `window`'s first paint (the whole window:
    its children are painted in the same pass), or FALLBACK_MS after it was made without one.

    Each callback runs in a loop iteration of its own, so input that arrived meanwhile is
    handled between them.
    """

    def __init__(self, window: QWidget, *, fallback_ms: int = FALLBACK_MS) -> None:
        super().__init__(window)
        self._window = window
        self._pending: list[Callable[[], None]] = []
        self._painted = False
        window.installEventFilter(self)
        self._fallback = QTimer(self)
        self._fallback.setSingleShot(True)
        self._fallback.timeout.connect(self._start)
        self._fallback.start(fallback_ms)

    @property
    def painted(self) -> bool:
        """Whether the first paint (or the fallback) came: later callbacks run soon."""
        return self._painted

    def call(self, callback: Callable[[], None]) -> None:
        """Run `callback` after the first paint (soon, in the loop, once it has happened)."""
        self._pending.append(callback)
        if self._painted and len(self._pending) == 1:
            QTimer.singleShot(0, self._next)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._window and event.type() == QEvent.Type.Paint:
            # Seen as the paint starts: the callbacks wait until the loop runs again.
            QTimer.singleShot(0, self._start)
        return False

    def _start(self) -> None:
        if self._painted:
            return
        self._painted = True
        self._fallback.stop()
        self._window.removeEventFilter(self)
        self._next()

    def _next(self) -> None:
        if not self._pending:
            return
        callback = self._pending.pop(0)
        if self._pending:
            QTimer.singleShot(0, self._next)
        callback()
