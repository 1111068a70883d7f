"""Many chats: 10,000 chats on the gateway and in the app's store, in the real app's sidebar.

`python -m desktop` on a data dir seeded by bench/bigseed.py (10 messages a chat). The driver
reads when the window was first painted and the chat list first painted with every chat in it
(bench_probe.FirstPaints, set before the window shows; a start lists the newest chats with the
window, all of them once it is painted), waits until the gateway's list has been merged, then
scrolls the list a page at a time at key-repeat pace and jumps the scroll bar to far places,
each step a synchronous repaint; then the tree's RSS. The same-run baseline is the same app
with 100 chats.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import time
from pathlib import Path
from typing import Any

from bench.inapp import REPORT_DIR_ENV, finish, online, rss_mb, tree_rss_mb, until

BENCH = "many_chats"
CHATS = int(os.environ.get("HERMES_QT_BENCH_CHATS", "10000"))
BASE_CHATS = 100
PER_CHAT = 10
PAGES = 200  # page steps down from the top, then as many jumps of the bar
PACE = 1 / 30
SCROLL_ENV = "HERMES_QT_BENCH_SCROLL"
SETTLE = 2.0  # the gateway's list pages (200, 1,000, 5,000, ...) merge in this time
FIRST_PAINT_MS = 150.0
SCROLL_MS = 16.0
MEMORY_MB = 20.0


async def first_paints(app: Any, chats: int) -> dict[str, Any]:
    """When the window was first painted and the chat list first painted with every chat
    (a start lists the newest ones first, the rest once the window is painted), and one list
    repaint's cost."""
    from desktop.app.bench_probe import FIRST_PAINTS as marks

    def full() -> float | None:
        return next((at for at, rows in marks.sidebar_paints if rows >= chats), None)

    await until(lambda: marks.window is not None and full() is not None, 60, "paints")
    view = app.window.sidebar.session_list
    t0 = time.perf_counter()
    view.viewport().repaint()  # what the first one cost, the list the same
    cost = time.perf_counter() - t0
    painted = full()
    assert marks.window is not None and painted is not None
    return {
        "window": marks.window,
        "sidebar": painted + cost,  # the paint's arrival plus what a paint costs
        "sidebar_rows": next(rows for at, rows in marks.sidebar_paints if at == painted),
        "first_rows": marks.sidebar_rows,
        "paint_cost": cost,
    }


async def scroll(app: Any) -> list[float]:
    """Page steps down the list, then jumps of the bar; seconds each step took to repaint."""
    view = app.window.sidebar.session_list
    bar = view.verticalScrollBar()
    rng = random.Random(28)
    steps: list[float] = []
    step_at = time.perf_counter()
    for n in range(2 * PAGES):
        step_at += PACE
        await asyncio.sleep(max(0.0, step_at - time.perf_counter()))
        target = bar.value() + bar.pageStep() if n < PAGES else rng.randint(0, bar.maximum())
        t0 = time.perf_counter()
        bar.setValue(target)
        view.viewport().repaint()
        steps.append(time.perf_counter() - t0)
    return steps


async def drive(app: Any) -> None:
    from bench.common import percentile

    chats = int(os.environ["HERMES_QT_BENCH_CHATS"])
    paints = await first_paints(app, chats)
    await online(app)
    model = app.window.sidebar.session_list.model()
    await until(lambda: model.rowCount() >= chats, 120, "every chat listed")
    await asyncio.sleep(SETTLE)
    out: dict[str, Any] = {**paints, "rows": model.rowCount()}
    if os.environ.get(SCROLL_ENV):
        steps = await scroll(app)
        out |= {"p99": percentile(steps, 99), "worst": max(steps), "steps": len(steps)}
    gc.collect()
    await asyncio.sleep(1.0)
    out["rss"] = tree_rss_mb()
    out["app_rss"] = rss_mb(os.getpid())
    if os.environ.get(REPORT_DIR_ENV):  # a profiling run (bench/memory.py's profile)
        from bench.memory import heap_reports

        out["heap"] = await heap_reports(app)
    finish(app, out)


def run(
    chats: int,
    *,
    scrolling: bool,
    per_chat: int = PER_CHAT,
    heap_dir: str = "",
    traced: bool = False,
) -> dict[str, Any]:
    from bench.apprun import run_app
    from bench.bigseed import copy_into, seeded

    source = seeded(chats, chats * per_chat)

    def fill(root: Path) -> None:
        copy_into(source, root)

    env = {"HERMES_QT_BENCH_CHATS": str(chats)}
    if scrolling:
        env[SCROLL_ENV] = "1"
    if heap_dir:
        from bench.heap import site_env

        env |= site_env(heap_dir)
    if traced:
        env["PYTHONTRACEMALLOC"] = "1"
    return run_app("bench.many_chats", timeout=240, seed=fill, env=env)


def main() -> int:
    from bench.common import Result, emit

    base = run(BASE_CHATS, scrolling=True)
    got = run(CHATS, scrolling=True)
    first = (got["sidebar"] - got["window"]) * 1000
    base_first = (base["sidebar"] - base["window"]) * 1000
    grew = got["rss"] - base["rss"]
    grew_app = got["app_rss"] - base["app_rss"]
    memory_note = ""
    if grew > MEMORY_MB:
        from bench.memory import baseline_split, profile

        def runs(heap_dir: str, traced: bool) -> dict[str, Any]:
            return run(CHATS, scrolling=False, heap_dir=heap_dir, traced=traced)

        measured = {"tree": got["rss"], "app": got["app_rss"], "base": base["rss"]}
        name = profile(
            f"{CHATS:,} chats in the list", "many_chats", measured, runs, baseline_split()
        )
        memory_note = f"; profile {name}"
    how = (
        f"python -m desktop, {CHATS:,} chats x {PER_CHAT} messages in its gateway's store and "
        f"its own; {got['sidebar_rows']:,} rows in the list at that paint (the newest "
        f"{got['first_rows']:,} at its first, with the window)"
    )
    emit(
        [
            Result(
                BENCH,
                f"{CHATS:,} chats: every chat listed and painted after the window",
                f"<= {FIRST_PAINT_MS:g} ms",
                first,
                "ms",
                base_first,
                f"{BASE_CHATS} chats, same app",
                first <= FIRST_PAINT_MS and got["sidebar_rows"] >= CHATS,
                how + f"; the paint's arrival plus one list repaint "
                f"({got['paint_cost'] * 1000:.1f} ms)",
            ),
            Result(
                BENCH,
                f"{CHATS:,} chats: chat list scroll, p99 step",
                f"<= {SCROLL_MS:g} ms",
                got["p99"] * 1000,
                "ms",
                base["p99"] * 1000,
                f"{BASE_CHATS} chats, same app",
                got["p99"] * 1000 <= SCROLL_MS,
                f"{PAGES} page steps down at {1 / PACE:.0f}/s then {PAGES} jumps of the bar to "
                f"random places, each a synchronous repaint; worst {got['worst'] * 1000:.1f} ms",
            ),
            Result(
                BENCH,
                f"{CHATS:,} chats: app + gateway RSS",
                f"<= +{MEMORY_MB:g} MB over {BASE_CHATS} chats",
                got["rss"],
                "MB",
                base["rss"],
                f"{BASE_CHATS} chats, same app",
                grew <= MEMORY_MB,
                f"+{grew:.1f} MB (app +{grew_app:.1f} MB, gateway child "
                f"+{grew - grew_app:.1f} MB); after the list was merged and scrolled" + memory_note,
            ),
        ]
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
