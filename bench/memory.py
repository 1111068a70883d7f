"""Memory: the app and its gateway child with 5 x 2,000 or 100,000 messages open vs a baseline.

Everything runs as users run it: `python -m desktop` (real window, store, embedded gateway
child), the sessions seeded in the gateway's store and opened from the window. The baseline
is a bare QApplication with the same gateway child, measured in the same run.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from bench.inapp import (
    PaintClock,
    finish,
    forget_driver_sources,
    listed,
    online,
    rss_mb,
    tree,
    tree_rss_mb,
    until,
)

# The runner's modules (subprocess, the gateway store, the report) are imported where they are
# used, never in the app the driver runs in.

BENCH = "memory"
TARGET_MB = 120.0
KEYS_ENV = "HERMES_QT_BENCH_KEYS"
PROFILE_ENV = "HERMES_QT_BENCH_MEMORY_PROFILE"
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
        await until(lambda t=started: clock.painted_since(t), 30, "top painted")
    gc.collect()
    await asyncio.sleep(1.0)
    app_rss = rss_mb(os.getpid())
    if os.environ.get(PROFILE_ENV):
        write_memory_profile(os.environ[PROFILE_ENV])
    finish(app, {"rss": tree_rss_mb(), "app_rss": app_rss, "rows": rows})


def smaps_summary(pid: int, top: int = 25) -> list[str]:
    """Resident kB per mapping (file name, [heap], [anon]) of one process, largest first."""
    sizes: dict[str, int] = {}
    name = "[anon]"
    with open(f"/proc/{pid}/smaps", encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            if parts and not parts[0].endswith(":"):
                name = parts[5] if len(parts) > 5 else "[anon]"
                name = os.path.basename(name) if name.startswith("/") else name
            elif parts and parts[0] == "Rss:":
                sizes[name] = sizes.get(name, 0) + int(parts[1])
    ordered = sorted(sizes.items(), key=lambda kv: -kv[1])[:top]
    return [f"  {kb / 1024:8.1f} MB  {n}" for n, kb in ordered]


def write_memory_profile(case_name: str, slug: str = "") -> None:
    """Where the tree's resident memory is: per mapping, and the Python heap by line."""
    import tracemalloc

    from bench.common import PROFILES

    lines = [f"memory profile: {case_name}", ""]
    for pid in tree():
        command = b" ".join(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:4])
        head = f"{command.decode(errors='replace')} (pid {pid}): RSS {rss_mb(pid):.1f} MB"
        lines += [head, *smaps_summary(pid), ""]
    if tracemalloc.is_tracing():
        snapshot = tracemalloc.take_snapshot()
        lines.append("Python heap of the app by file (tracemalloc, PYTHONTRACEMALLOC=1):")
        lines += [f"  {stat}" for stat in snapshot.statistics("filename")[:25]]
    PROFILES.mkdir(parents=True, exist_ok=True)
    slug = slug or ("memory-long" if "100,000" in case_name else "memory")
    (PROFILES / f"{slug}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def case(sessions: dict[str, int], profile: str = "") -> dict[str, Any]:
    from bench.apprun import run_app
    from bench.seed import seed

    env = {PROFILE_ENV: profile, "PYTHONTRACEMALLOC": "1"} if profile else {}
    return run_app(
        "bench.memory",
        timeout=300,
        seed=partial(seed, sessions=sessions),
        **{KEYS_ENV: ",".join(sessions)},
        **env,
    )


def main() -> int:
    from bench.common import Result, emit, run_child

    base = run_child(["-m", "bench.baseline"], 90)["rss"]
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
        note = ""
        if got["rss"] > TARGET_MB:
            case(sessions, profile=name)  # a second run, traced: its figures are not reported
            note = "; profile " + ("memory-long.txt" if "100,000" in name else "memory.txt")
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

    emit(rows + scrolled(base))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    raise SystemExit(main())
