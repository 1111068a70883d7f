"""Helpers for bench drivers that run inside the real app (see HERMES_QT_BENCH_DRIVER)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import psutil

from bench.common import child_report


async def until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Wait, letting the app run, until `predicate()` holds; RuntimeError after `timeout`."""
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.002)


def tree() -> list[psutil.Process]:
    """This app process and every process it started (the embedded gateway)."""
    me = psutil.Process()
    return [me, *me.children(recursive=True)]


def tree_rss_mb() -> float:
    return sum(p.memory_info().rss for p in tree()) / 2**20


def cpu_seconds(procs: list[psutil.Process]) -> float:
    """CPU time of `procs`, nanosecond clock where Linux offers one (schedstat)."""
    total = 0.0
    for p in procs:
        try:
            with open(f"/proc/{p.pid}/schedstat", encoding="ascii") as f:
                total += int(f.read().split()[0]) / 1e9
        except OSError:
            times = p.cpu_times()
            total += times.user + times.system
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


async def online(app: Any, timeout: float = 60.0) -> None:
    from desktop.core.models import ConnectionState

    backend = app.entries[0].backend
    await until(lambda: backend.status().state is ConnectionState.ONLINE, timeout, "online")


async def listed(app: Any, keys: list[str], timeout: float = 60.0) -> None:
    """Wait until the session list (filled from the gateway) names every key."""
    model = app.window.session_model
    await until(lambda: all(model.row_of(k) is not None for k in keys), timeout, "session list")


def finish(app: Any, data: dict[str, Any]) -> None:
    child_report(data)
    app.finish(0)
