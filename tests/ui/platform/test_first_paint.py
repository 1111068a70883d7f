"""Work left until a window's first paint runs right after it, in order, and never before."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QWidget

from desktop.ui.platform.first_paint import AfterFirstPaint


def test_callbacks_wait_for_the_first_paint_then_run_in_order(qtbot: Any) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    after = AfterFirstPaint(window)
    ran: list[str] = []
    after.call(lambda: ran.append("first"))
    after.call(lambda: ran.append("second"))
    turned: list[int] = []  # the loop has run its zero timers (and so would the callbacks')
    QTimer.singleShot(0, lambda: QTimer.singleShot(0, lambda: turned.append(1)))
    qtbot.waitUntil(lambda: turned == [1])
    assert ran == [] and not after.painted, "nothing before the window is painted"
    with qtbot.waitExposed(window):
        window.show()
    qtbot.waitUntil(lambda: ran == ["first", "second"])
    after.call(lambda: ran.append("later"))  # once painted: soon, in the loop
    assert ran == ["first", "second"]
    qtbot.waitUntil(lambda: ran == ["first", "second", "later"])


def test_a_window_never_painted_runs_them_all_the_same(qtbot: Any) -> None:
    """A window the window manager never exposes (minimized, another workspace)."""
    window = QWidget()
    qtbot.addWidget(window)
    after = AfterFirstPaint(window, fallback_ms=30)
    ran: list[str] = []
    after.call(lambda: ran.append("done"))
    qtbot.waitUntil(lambda: ran == ["done"])
    assert after.painted
