"""Memory while reading far back: a 100,000-message session scrolled 20,000 messages up, then down.

`python -m desktop` with the session seeded in its gateway's store; the driver opens it from the
window, then drags the scroll bar to the top again and again (what a user does to reach old
messages fast: each arrival at the top loads the next older page from the gateway) until the
message 20,000 back from the end is on screen, reads the tree RSS, then drags it to the bottom
again and again until the newest message is on screen and reads the tree RSS again. The
baseline is a bare QApplication with the same gateway child, measured in the same run.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
from functools import partial
from typing import Any

from bench.inapp import (
    REPORT_DIR_ENV,
    PaintClock,
    finish,
    forget_driver_sources,
    listed,
    online,
    rss_mb,
    tree_rss_mb,
    until,
)
from bench.memory import open_session

BENCH = "memory"
TARGET_MB = 150.0
N = 100_000
BACK = 20_000  # messages back from the end the reader goes
KEY = "bench-long"


def first_shown(app: Any) -> int:
    """The history position of the first message on screen (ids are `key:position`)."""
    view = app.window.chat_view
    row = view.indexAt(view.viewport().rect().topLeft()).row()
    model = view.chat_model
    if row < 0 or row >= model.rowCount():
        return N
    tail = model.message_at(row).id.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else N


def newest_shown(app: Any) -> bool:
    view = app.window.chat_view
    model = view.chat_model
    n = model.rowCount()
    return bool(n) and model.message_at(n - 1).id == f"{KEY}:{N - 1}" and view.at_bottom


async def drag(app: Any, clock: PaintClock, up: bool, done: Any, what: str) -> int:
    """Drag the bar to one end, repaint, let the app run; again until `done()`. Drags made."""
    view = app.window.chat_view
    bar = view.verticalScrollBar()
    drags = 0
    deadline = time.perf_counter() + 240
    while not done():
        if time.perf_counter() > deadline:
            raise RuntimeError(f"timed out scrolling to {what}")
        started = time.perf_counter()
        bar.setValue(bar.minimum() if up else bar.maximum())
        view.viewport().update()
        drags += 1
        await until(partial(clock.painted_since, started), 30, f"{what} painted")
        await asyncio.sleep(0.01)  # a page asked for by this drag is on its way
    return drags


async def settle() -> None:
    gc.collect()
    await asyncio.sleep(1.0)


async def drive(app: Any) -> None:
    forget_driver_sources()
    await online(app)
    await listed(app, [KEY])
    clock = PaintClock(app.window)
    await open_session(app, clock, KEY)
    model = app.window.chat_view.chat_model
    await settle()
    opened = {"rss": tree_rss_mb(), "app_rss": rss_mb(os.getpid())}
    up = await drag(app, clock, True, lambda: first_shown(app) <= N - BACK, "20,000 back")
    await settle()
    far = {"rss": tree_rss_mb(), "app_rss": rss_mb(os.getpid()), "rows": model.rowCount()}
    far["at"] = first_shown(app)
    if os.environ.get(REPORT_DIR_ENV):  # a profiling run: the split far back, then stop
        from bench.memory import heap_reports

        finish(app, {"far": far, "heap": await heap_reports(app)})
        return
    down = await drag(app, clock, False, lambda: newest_shown(app), "the newest message")
    await settle()
    back = {"rss": tree_rss_mb(), "app_rss": rss_mb(os.getpid()), "rows": model.rowCount()}
    finish(app, {"opened": opened, "far": far, "back": back, "up_drags": up, "down_drags": down})


def run(heap_dir: str = "", traced: bool = False) -> dict[str, Any]:
    """One run; with `heap_dir`, a profiling one that stops far back (bench/memory.py)."""
    from bench.apprun import run_app
    from bench.heap import site_env
    from bench.seed import seed

    env = site_env(heap_dir) if heap_dir else {}
    if traced:
        env["PYTHONTRACEMALLOC"] = "1"
    return run_app(
        "bench.scroll_memory", timeout=400, seed=partial(seed, sessions={KEY: N}), env=env
    )


def results(base: float, base_heap: dict[str, Any] | None = None) -> list[Any]:
    """The two rows (far back, back down) against the same-run baseline `base` (MB);
    `base_heap`: the baseline's split for a profile (bench/memory.py's `baseline_split`)."""
    from bench.common import Result
    from bench.memory import baseline_split, profile

    got = run()
    note = ""
    if max(got["far"]["rss"], got["back"]["rss"]) > TARGET_MB:
        measured = {"tree": got["far"]["rss"], "app": got["far"]["app_rss"], "base": base}
        title = f"{N:,}-message session scrolled {BACK:,} back"
        name = profile(title, "memory-scrolled", measured, run, base_heap or baseline_split())
        note = f"; profile {name}"
    how = (
        "python -m desktop and its gateway child, the session seeded in the gateway's store "
        "and opened from the window; the scroll bar dragged to the top again and again "
        f"({got['up_drags']} drags, each loading an older page)"
    )
    far, back = got["far"], got["back"]
    return [
        Result(
            BENCH,
            f"app + gateway RSS, {N:,} messages scrolled {BACK:,} back",
            f"<= {TARGET_MB:g} MB",
            far["rss"],
            "MB",
            base,
            "bare QApplication + the same gateway",
            far["rss"] <= TARGET_MB,
            f"{how} until message {far['at']:,} is on screen; app alone "
            f"{far['app_rss']:.0f} MB, {far['rows']:,} rows in the chat model (tree "
            f"{got['opened']['rss']:.0f} MB just opened)" + note,
        ),
        Result(
            BENCH,
            f"app + gateway RSS, {N:,} messages, back down to the newest",
            f"<= {TARGET_MB:g} MB",
            back["rss"],
            "MB",
            base,
            "bare QApplication + the same gateway",
            back["rss"] <= TARGET_MB,
            f"then the bar dragged to the bottom again and again ({got['down_drags']} "
            f"drags) until the newest message is on screen; app alone "
            f"{back['app_rss']:.0f} MB, {back['rows']:,} rows in the chat model" + note,
        ),
    ]


def main() -> int:
    """This part of the memory bench alone (`python -m bench memory` runs it with the rest)."""
    from bench.common import emit, run_child

    emit(results(run_child(["-m", "bench.baseline"], 90)["rss"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
