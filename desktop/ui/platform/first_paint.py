"""Work left until a window has been painted once: what start-up does after the user sees it."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QWidget

# A window the window manager never exposes (another workspace, minimized) is never painted:
# the work runs this long after `show()` all the same.
FALLBACK_MS = 2000
_NEXT = QEvent.Type(QEvent.registerEventType())


class AfterFirstPaint(QObject):
    """Runs callbacks once, in order, right after `window`'s first paint (the whole window:
    its children are painted in the same pass), or FALLBACK_MS after it was made without one.

    Each callback runs in a loop iteration of its own, after the input and the paints that
    came meanwhile (a list a callback filled is on screen before the next one runs).
    """

    def __init__(self, window: QWidget, *, fallback_ms: int = FALLBACK_MS) -> None:
        super().__init__(window)
        self._window = window
        self._pending: list[Callable[[], None]] = []
        self._painted = False
        self._queued = False  # a `_next` is posted
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
        if self._painted:
            self._turn()

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
        self._queued = False
        if not self._pending:
            return
        callback = self._pending.pop(0)
        try:
            callback()
        finally:
            if self._pending:
                self._turn()

    def _turn(self) -> None:
        """`_next` once the loop has handled what is queued now, the paints the last callback
        asked for among it (posted after them, at the priority Qt gives those)."""
        if not self._queued:
            self._queued = True
            QCoreApplication.postEvent(self, QEvent(_NEXT), Qt.EventPriority.LowEventPriority.value)

    def customEvent(self, event: QEvent) -> None:
        if event.type() == _NEXT:
            self._next()
