"""Helpers for bench drivers that run inside the real app (see HERMES_QT_BENCH_DRIVER).

Kept light on purpose (no psutil, no profiler modules): whatever a driver imports is resident in
the app it measures.
"""

from __future__ import annotations

import asyncio
import json
import linecache
import os
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULT = "BENCH_CHILD "
# Set in a profiling run: where processes started with bench/heap_site answer with their
# heap report (bench/heap.py). Read here, so that only such a run imports bench.heap.
REPORT_DIR_ENV = "HERMES_QT_BENCH_HEAP_DIR"
PAGE = os.sysconf("SC_PAGE_SIZE")
FRAME_MASK = (1 << 55) - 1


async def until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Wait, letting the app run, until `predicate()` holds; RuntimeError after `timeout`."""
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.002)


async def run_until(deadline: float) -> None:
    """Let the app run until `time.perf_counter()` reaches `deadline`. One asyncio.sleep is
    not enough: under qasync it is a Qt coarse timer, which may fire up to 5 % early (a
    10.3 s sleep ended 9.96 s after the run's start, before the last deltas were due)."""
    while (left := deadline - time.perf_counter()) > 0:
        await asyncio.sleep(left)


def forget_driver_sources() -> None:
    """The driver's own module sources, read in by PySide6's import hook, are not the app's."""
    linecache.clearcache()


def tree(root: int | None = None) -> list[int]:
    """This app process (or `root`) and every process it started (the embedded gateway), by
    pid."""
    pids = [os.getpid() if root is None else root]
    for pid in pids:  # grows while walking: children of children
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:  # gone meanwhile
            continue
        for task in tasks:
            try:
                pids += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
    return pids


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def tree_rss_mb() -> float:
    return sum(rss_mb(pid) for pid in tree())


def tree_distinct_mb() -> float | None:
    """The tree's distinct resident pages in MB: a page two processes both map (the Python
    interpreter's and the C libraries' code, which the app and its gateway each load) is
    counted once, as the machine holds it once; None where page frames cannot be read
    (/proc/<pid>/pagemap shows them to root only)."""
    frames: set[int] = set()
    for pid in tree():
        try:
            with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pm:
                for line in maps:
                    span, perms = line.split()[:2]
                    if perms.startswith("---") or line.rstrip().endswith("[vsyscall]"):
                        continue  # reserved, never resident
                    start, end = (int(x, 16) // PAGE for x in span.split("-"))
                    pm.seek(start * 8)
                    for at in range(start, end, 65536):  # 512 KB of entries at a time
                        chunk = pm.read((min(end, at + 65536) - at) * 8)
                        for (entry,) in struct.iter_unpack("<Q", chunk):
                            if entry >> 63:  # present: bits 0-54 are its frame
                                frames.add(entry & FRAME_MASK)
        except OSError:  # gone meanwhile
            continue
    if frames <= {0}:  # present pages without frames: not root
        return None
    return len(frames) * PAGE / 2**20


def cpu_seconds(pids: list[int]) -> float:
    """CPU time of `pids` from the kernel's nanosecond clock (schedstat)."""
    total = 0.0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
        except OSError:
            continue
    return total


def threads_cpu_seconds(pids: list[int]) -> float:
    """CPU time of `pids`, every thread of each (those that ended too) and the children each
    waited for, from the kernel's tick counts (/proc/PID/stat; 10 ms steps): for a process
    whose work is not on its main thread (a gateway's worker threads)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15]) / tick  # utime stime cutime cstime
    return total


class PaintClock:
    """Records when each chat-view paint ends (the model hears `paint_done` after each)."""

    def __init__(self, window: Any) -> None:
        self.view = window.chat_view
        self.ends: list[float] = []
        model = self.view.chat_model
        original = model.paint_done

        def paint_done() -> None:
            self.ends.append(time.perf_counter())
            original()

        model.paint_done = paint_done

    def painted_since(self, t: float) -> bool:
        return bool(self.ends) and self.ends[-1] > t


def in_front(window: Any, key: str, rows: int = 0) -> Callable[[], bool]:
    """Whether `key` is the chat in the window's front tab, with at least `rows` rows shown."""
    return lambda: window.session_key == key and window.chat_view.chat_model.rowCount() >= rows


async def online(app: Any, timeout: float = 60.0) -> None:
    from desktop.core.models import ConnectionState

    backend = app.entries[0].backend
    await until(lambda: backend.status().state is ConnectionState.ONLINE, timeout, "online")


async def listed(app: Any, keys: list[str], timeout: float = 60.0) -> None:
    """Wait until the session list (filled from the gateway) names every key."""
    model = app.window.session_model
    await until(lambda: all(model.row_of(k) is not None for k in keys), timeout, "session list")


def finish(app: Any, data: dict[str, Any]) -> None:
    print(RESULT + json.dumps(data), flush=True)
    app.finish(0)
