"""Long sessions: 10,000 messages to first painted screen and a full scroll, vs a QTextBrowser."""

from __future__ import annotations

import html
import time

from PySide6.QtWidgets import QTextBrowser

from bench.common import Result, emit, percentile, profile_to_file
from bench.qtsupport import PaintTimedChatView, application, pump_until
from bench.sample import session

BENCH = "long_session"
N = 10_000
NAIVE_N = 1_000  # the naive view is scaled up linearly to N


def chat_view_figures() -> tuple[float, float, float]:
    """(first screen s, worst scroll step s, p99 scroll step s) for the real ChatView."""
    application()
    view = PaintTimedChatView()
    view.resize(900, 700)
    view.show()
    pump_until(lambda: bool(view.paint_ends), 10)
    messages = session("long", N)
    painted = len(view.paint_ends)
    started = time.perf_counter()
    view.show_messages(messages)
    pump_until(lambda: len(view.paint_ends) > painted, 10)
    first = view.paint_ends[-1] - started
    bar = view.verticalScrollBar()
    steps: list[float] = []
    bar.setValue(bar.minimum())
    pump_until(lambda: True)
    value = bar.minimum()
    deadline = time.perf_counter() + 30
    while value < bar.maximum() and time.perf_counter() < deadline:
        value = min(bar.maximum(), value + bar.pageStep())
        t0 = time.perf_counter()
        bar.setValue(value)
        view.viewport().repaint()
        steps.append(time.perf_counter() - t0)
    return first, max(steps, default=0.0), percentile(steps, 99)


def naive_first_screen() -> float:
    """A QTextBrowser holding NAIVE_N messages as HTML, first paint, scaled to N messages."""
    application()
    browser = QTextBrowser()
    browser.resize(900, 700)
    messages = session("naive", NAIVE_N)
    started = time.perf_counter()
    browser.setHtml(
        "".join(f"<p><b>{m.role.value}</b>: {html.escape(m.text)}</p>" for m in messages)
    )
    browser.show()
    browser.viewport().repaint()
    elapsed = time.perf_counter() - started
    browser.hide()
    return elapsed * N / NAIVE_N


def profile_first_screen() -> str:
    """cProfile of opening the session once more, kept for a missed target."""
    view = PaintTimedChatView()
    view.resize(900, 700)
    view.show()
    messages = session("again", N)

    def open_session() -> None:
        count = len(view.paint_ends)
        view.show_messages(messages)
        pump_until(lambda: len(view.paint_ends) > count, 10)
        bar = view.verticalScrollBar()
        for _ in range(20):
            bar.setValue(bar.value() - bar.pageStep())
            view.viewport().repaint()

    return profile_to_file("long_session", open_session).name


def main() -> int:
    first, worst, p99 = chat_view_figures()
    naive = naive_first_screen()
    note = "" if first <= 0.2 and worst <= 0.05 else f"profile {profile_first_screen()}"
    emit(
        [
            Result(
                BENCH,
                f"{N:,} messages: first screen painted",
                "<= 200 ms",
                first * 1000,
                "ms",
                naive * 1000,
                f"QTextBrowser, {NAIVE_N:,} messages x{N // NAIVE_N}",
                first <= 0.2,
                note,
            ),
            Result(
                BENCH,
                "scroll end to end: worst page step",
                "<= 50 ms",
                worst * 1000,
                "ms",
                None,
                "",
                worst <= 0.05,
                f"page steps with a synchronous repaint each; p99 {p99 * 1000:.1f} ms; {note}",
            ),
        ]
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
