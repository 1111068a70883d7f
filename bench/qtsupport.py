"""Qt helpers for benches outside the app: one QApplication and bounded event pumping."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from PySide6.QtCore import QDeadlineTimer, QEventLoop
from PySide6.QtWidgets import QApplication


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
