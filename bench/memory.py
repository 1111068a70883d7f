"""Memory: the app and its gateway child with 5 x 2,000 or 100,000 messages open vs a baseline.

Everything runs as users run it: `python -m desktop` (real window, store, embedded gateway
child), the sessions seeded in the gateway's store and opened from the window. The baseline
is a bare QApplication with the same gateway child, measured in the same run. Every case also
writes docs/bench-profiles/memory.txt (memory-long.txt): where that memory goes, from two more
runs of it (bench/heap.py, bench/memory_profile.py).
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.inapp import (
    REPORT_DIR_ENV,
    PaintClock,
    finish,
    forget_driver_sources,
    listed,
    online,
    rss_mb,
    tree,
    tree_distinct_mb,
    tree_rss_mb,
    until,
)

# The runner's modules (subprocess, the gateway store, the report) are imported where they are
# used, never in the app the driver runs in.

BENCH = "memory"
TARGET_MB = 120.0
KEYS_ENV = "HERMES_QT_BENCH_KEYS"
CASES = {
    "5 sessions x 2,000 messages": {f"bench-{k}": 2000 for k in range(5)},
    "one 100,000-message session": {"bench-long": 100_000},
}


def shown_rows(app: Any, key: str) -> int:
    model = app.window.chat_view.chat_model
    n = model.rowCount()
    return n if n and model.message_at(n - 1).id.startswith(f"{key}:") else 0


async def open_session(app: Any, clock: PaintClock, key: str, timeout: float = 120.0) -> float:
    """Open `key` from the window; seconds until its messages were painted."""
    started = time.perf_counter()
    app.window.open_session(key)
    await until(lambda: shown_rows(app, key) > 0, timeout, f"{key} shown")
    await until(lambda: clock.painted_since(started), timeout, f"{key} painted")
    return clock.ends[-1] - started


async def drive(app: Any) -> None:
    """In the app: open every session, paint its end and its start, then read the tree RSS."""
    keys = os.environ[KEYS_ENV].split(",")
    forget_driver_sources()
    await online(app)
    await listed(app, keys)
    clock = PaintClock(app.window)
    view = app.window.chat_view
    rows = 0
    for key in keys:
        await open_session(app, clock, key)
        rows += shown_rows(app, key)
        started = time.perf_counter()
        view.scrollToTop()
        view.viewport().update()
        await until(partial(clock.painted_since, started), 30, "top painted")
    gc.collect()
    await asyncio.sleep(1.0)
    data: dict[str, Any] = {"rss": tree_rss_mb(), "app_rss": rss_mb(os.getpid()), "rows": rows}
    data["distinct"] = tree_distinct_mb()
    if os.environ.get(REPORT_DIR_ENV):  # a profiling run: the split, after the figures
        data["heap"] = await heap_reports(app)
    finish(app, data)


async def heap_reports(app: Any) -> dict[str, Any]:
    """bench.heap's report of the app (with what its chat view and window hold) and of its
    gateway child (asked by signal)."""
    from PySide6.QtGui import QFontDatabase

    from bench.heap import ask, report

    window = app.window
    cache = window.chat_view.render_cache
    dpr = window.devicePixelRatioF()
    held = {
        "bubble pixmaps": (cache.pixmap_bytes / 2**20, len(cache.pixmaps)),
        "streamed block pixmaps": (cache.block_bytes / 2**20, len(cache.block_pixmaps)),
        "window backing store": (window.width() * window.height() * 4 * dpr * dpr / 2**20, 1),
    }
    counts = {
        "bubble layouts": len(cache.layouts),
        "rendered markdown": len(cache.docs.markdown),
        "row heights": len(cache.exact) + len(cache.estimates),
        "font families known to Qt": len(QFontDatabase.families()),
    }
    gateway = [pid for pid in tree() if pid != os.getpid()]
    return {
        "app": report(held=held, counts=counts),
        "gateway": await ask(gateway[0]) if gateway else {},
    }


def case(sessions: dict[str, int], heap_dir: str = "", traced: bool = False) -> dict[str, Any]:
    """One run of the app on `sessions`; with `heap_dir`, a profiling run (see `profile`)."""
    from bench.apprun import run_app
    from bench.heap import site_env
    from bench.seed import seed

    env = site_env(heap_dir) if heap_dir else {}
    if traced:
        env["PYTHONTRACEMALLOC"] = "1"
    return run_app(
        "bench.memory",
        timeout=300,
        seed=partial(seed, sessions=sessions),
        env={KEYS_ENV: ",".join(sessions), **env},
    )


def baseline_heap(heap_dir: str, traced: bool = False) -> dict[str, Any]:
    """bench.heap's reports of the baseline (bare Qt) and of its gateway child."""
    from bench.common import run_child
    from bench.heap import site_env

    env = site_env(heap_dir)
    if traced:
        env["PYTHONTRACEMALLOC"] = "1"
    heap: dict[str, Any] = run_child(["-m", "bench.baseline"], 90, **env)["heap"]
    return heap


def profile(
    title: str,
    slug: str,
    measured: dict[str, float],
    runs: Callable[[str, bool], dict[str, Any]],
    base: dict[str, dict[str, Any]],
) -> str:
    """Write docs/bench-profiles/<slug>.txt: the split of a profiling run and of a traced one
    (`runs(heap_dir, traced)` makes each; its figures are not reported), beside the
    baseline's (`base`: untraced and traced). Returns the file's name."""
    import tempfile

    from bench.common import PROFILES
    from bench.memory_profile import render

    with tempfile.TemporaryDirectory(prefix="hermes-bench-heap-") as heap_dir:
        split = dict(runs(heap_dir, False)["heap"])
        traced = dict(runs(heap_dir, True)["heap"])
    split.update(base=base["split"]["app"], base_gw=base["split"]["gateway"])
    traced.update(base=base["traced"]["app"], base_gw=base["traced"]["gateway"])
    PROFILES.mkdir(parents=True, exist_ok=True)
    path = PROFILES / f"{slug}.txt"
    path.write_text("\n".join(render(title, measured, split, traced)), encoding="utf-8")
    return path.name


def baseline_split() -> dict[str, dict[str, Any]]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hermes-bench-heap-") as heap_dir:
        return {"split": baseline_heap(heap_dir), "traced": baseline_heap(heap_dir, True)}


def distinct_note(tree_mb: float | None, base_mb: float | None) -> str:
    """The tree's distinct pages beside its RSS sum, when they could be read (root only)."""
    if tree_mb is None or base_mb is None:
        return ""
    return (
        f"; its distinct pages {tree_mb:.0f} MB (baseline {base_mb:.0f}): RSS counts the "
        f"library pages both processes map twice"
    )


def main() -> int:
    from bench.common import Result, emit, run_child

    baseline = run_child(["-m", "bench.baseline"], 90)
    base = baseline["rss"]
    base_heap = baseline_split()
    rows = []
    for name, sessions in CASES.items():
        try:
            got = case(sessions)
        except RuntimeError as exc:
            rows.append(
                Result(
                    BENCH,
                    f"app + gateway RSS, {name}",
                    f"<= {TARGET_MB:g} MB",
                    None,
                    "MB",
                    base,
                    "bare QApplication + the same gateway",
                    False,
                    f"the app could not open it: {str(exc)[-200:]}",
                )
            )
            continue
        # Where the memory goes, for every case (met or not): the issue keeps this profile.
        slug = "memory-long" if "100,000" in name else "memory"
        measured = {"tree": got["rss"], "app": got["app_rss"], "base": base}
        runs = partial(case, sessions)
        note = distinct_note(got.get("distinct"), baseline.get("distinct"))
        note += "; profile " + profile(name, slug, measured, runs, base_heap)
        rows.append(
            Result(
                BENCH,
                f"app + gateway RSS, {name}",
                f"<= {TARGET_MB:g} MB",
                got["rss"],
                "MB",
                base,
                "bare QApplication + the same gateway",
                got["rss"] <= TARGET_MB,
                f"python -m desktop and its gateway child, sessions seeded in the gateway's "
                f"store and opened from the window (last and first screen painted); "
                f"app alone {got['app_rss']:.0f} MB, {got['rows']:,} rows in the chat model" + note,
            )
        )
    from bench.scroll_memory import results as scrolled

    emit(rows + scrolled(base, base_heap))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    raise SystemExit(main())
