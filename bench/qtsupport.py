"""Qt helpers for benches: one QApplication, bounded event pumping, a paint-timed chat view."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from PySide6.QtCore import QDeadlineTimer, QEventLoop, QTimer
from PySide6.QtGui import QPaintEvent
from PySide6.QtWidgets import QApplication

from desktop.ui.chat_view import ChatView


def application() -> QApplication:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    app = QApplication.instance()
    if isinstance(app, QApplication):
        return app
    return QApplication(["bench"])


def pump_until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Process events until `predicate()` holds or `timeout` passes; returns the predicate."""
    app = application()
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            return False
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, QDeadlineTimer(5))
    return True


def run_for(seconds: float) -> None:
    """Run the Qt event loop for `seconds` (timers and paints happen as in the app)."""
    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


class PaintTimedChatView(ChatView):
    """The real ChatView, recording when each viewport paint finished (perf_counter seconds)."""

    def __init__(self) -> None:
        super().__init__()
        self.paint_ends: list[float] = []
        self.paint_costs: list[float] = []

    def paintEvent(self, e: QPaintEvent) -> None:
        started = time.perf_counter()
        super().paintEvent(e)
        done = time.perf_counter()
        self.paint_ends.append(done)
        self.paint_costs.append(done - started)
