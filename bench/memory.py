"""Memory: resident set with 5 sessions of 2,000 messages loaded, vs a bare QApplication."""

from __future__ import annotations

import argparse
import gc
from collections.abc import Callable

import psutil

from bench.common import Result, child_report, emit, run_child
from bench.qtsupport import PaintTimedChatView, application, pump_until

BENCH = "memory"
SESSIONS = 5
MESSAGES = 2000
TARGET_MB = 150.0


def rss_mb() -> float:
    return float(psutil.Process().memory_info().rss) / 2**20


def child_bare() -> dict[str, float]:
    app = application()
    app.processEvents()
    return {"rss": rss_mb()}


def _painted_after(view: PaintTimedChatView, count: int) -> Callable[[], bool]:
    return lambda: len(view.paint_ends) > count


def child_loaded() -> dict[str, float]:
    from bench.sample import session

    application()
    view = PaintTimedChatView()
    view.resize(900, 700)
    view.show()
    sessions = [session(f"s{k}", MESSAGES) for k in range(SESSIONS)]
    for messages in sessions:  # open each session, paint its end and its start
        view.show_messages(messages)
        pump_until(lambda: bool(view.paint_ends), 10)
        view.scrollToTop()
        pump_until(_painted_after(view, len(view.paint_ends)), 10)
    gc.collect()
    pump_until(lambda: True)
    return {"rss": rss_mb(), "messages": float(sum(len(s) for s in sessions))}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.memory")
    p.add_argument("--child", choices=["bare", "loaded"])
    args = p.parse_args(argv)
    if args.child:
        child_report(child_bare() if args.child == "bare" else child_loaded())
        return 0
    bare = run_child(["-m", "bench.memory", "--child", "bare"], 60)["rss"]
    loaded = run_child(["-m", "bench.memory", "--child", "loaded"], 80)["rss"]
    emit(
        [
            Result(
                BENCH,
                f"RSS, {SESSIONS} sessions x {MESSAGES:,} messages",
                f"<= {TARGET_MB:g} MB (Electron client ~825 MB idle)",
                loaded,
                "MB",
                bare,
                "bare QApplication",
                loaded <= TARGET_MB,
                "chat view opened each session and painted its last and first screen",
            )
        ]
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
