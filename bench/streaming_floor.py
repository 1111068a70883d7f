"""The streaming rows' same-run floor: the deltas of bench.streaming, on its schedule, appended
to a bare QPlainTextEdit in a bare QApplication (no markdown, no chat model, no gateway).

What it measures is what showing text at that rate costs this machine at that moment in Qt
alone: the timer that feeds it, the append, the repaint. A slow hour of a shared VM raises it
with the app's figure, so the app's p99 can be read against it (bench.streaming runs one of
these before each of its own runs). Run as `python -m bench.streaming_floor`; prints one
`BENCH_CHILD {...}` line.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QPaintEvent, QTextCursor
from PySide6.QtWidgets import QApplication, QPlainTextEdit

from bench.common import percentile
from bench.inapp import RESULT
from bench.streaming import (
    DURATION,
    RATE,
    REPLY_DELTAS,
    StreamRun,
    delta_text,
    feed_due,
    on_screen_latencies,
)

# The app's main window's size (desktop/ui/window/main_window.py).
WINDOW = (1040, 700)


class _View(QPlainTextEdit):
    """A plain text view that notes when each of its paints ended."""

    def __init__(self) -> None:
        super().__init__()
        self.ends: list[float] = []

    def paintEvent(self, e: QPaintEvent) -> None:
        super().paintEvent(e)
        self.ends.append(time.perf_counter())


def measure(app: QApplication, view: _View, settle_ms: int = 200) -> dict[str, Any]:
    """Show `view`, let it paint for `settle_ms` (as the app's window has before its stream),
    then feed it the stream; the latencies as bench.streaming counts them."""
    run = StreamRun()
    cursor = QTextCursor(view.document())
    start = 0.0
    total = int(DURATION * RATE)

    def deliver(k: int) -> None:
        step = k % REPLY_DELTAS
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(("\n\n" if k and step == 0 else "") + delta_text(step))

    def feed() -> None:
        if feed_due(run, start, total, deliver):
            # The view follows the end as the chat view does; the text is its from here.
            view.verticalScrollBar().setValue(view.verticalScrollBar().maximum())
            run.flushes.append((time.perf_counter(), run.fed))
        if run.fed >= total:
            feeder.stop()
            QTimer.singleShot(300, app.quit)

    feeder = QTimer()
    feeder.setTimerType(Qt.TimerType.PreciseTimer)
    feeder.setInterval(1)
    feeder.timeout.connect(feed)
    painted = 0

    def begin() -> None:
        nonlocal start, painted
        painted = len(view.ends)
        start = time.perf_counter() + 0.05
        feeder.start()

    view.show()
    QTimer.singleShot(settle_ms, begin)
    # One exec for all of it: Qt 6's quit() closes the windows, so a second would paint none.
    app.exec()
    lat = on_screen_latencies(run, view.ends[painted:])
    return {
        "delta_p99": percentile(lat, 99),
        "delta_max": max(lat, default=0.0),
        "on_screen": len(lat) / max(1, run.fed),
        "fed": run.fed,
    }


def main() -> int:
    app = QApplication(["bench-streaming-floor"])
    view = _View()
    view.resize(*WINDOW)
    print(RESULT + json.dumps(measure(app, view)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
