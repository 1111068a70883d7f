"""Work left until a window's first paint runs right after it, in order, and never before."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QObject, QTimer
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


def test_what_a_callback_changed_is_painted_before_the_next_one_runs(qtbot: Any) -> None:
    """Start-up fills the chat list in one callback and warms code colours (tens of ms) in the
    next: the full list is on screen first, not after the warming."""
    window = QWidget()
    qtbot.addWidget(window)
    child = QWidget(window)
    child.resize(50, 50)
    after = AfterFirstPaint(window)
    seen: list[str] = []

    class Paints(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if watched is child and event.type() == QEvent.Type.Paint and seen:
                seen.append("painted")
            return False

    paints = Paints()
    child.installEventFilter(paints)
    after.call(lambda: (seen.append("filled"), child.update()))
    after.call(lambda: seen.append("next"))
    with qtbot.waitExposed(window):
        window.show()
    qtbot.waitUntil(lambda: "next" in seen)
    assert seen[:3] == ["filled", "painted", "next"]
