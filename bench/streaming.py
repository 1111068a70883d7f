"""Streaming: 2,000 deltas/s into a markdown reply (a growing table, a code block) in the app.

`python -m desktop` with its window, store and gateway child; the session is opened from the
window. Deltas enter where a received frame enters the client (decode, then the client's
event dispatch, router, conversation, window, chat view): the socket and the gateway are not
in this row, their rates are the throughput rows. Three runs, each must meet the target:
three on the machine as it is (the quiet row) and three while a busy-loop process keeps one
of the machine's cores busy (the under-load row), reported beside the quiet runs of the
same invocation.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from PySide6.QtCore import Qt, QTimer

from bench.apprun import run_app
from bench.common import Result, emit, percentile, run_child, write_profile
from bench.inapp import PaintClock, finish, listed, online, run_until, until
from bench.memory import open_session
from bench.seed import seed
from desktop.core.link.protocol import decode_frame, encode_event

BENCH = "streaming"
RATE = 2000
STREAM_S_ENV = "HERMES_QT_BENCH_STREAM_S"
DURATION = float(os.environ.get(STREAM_S_ENV, "10"))
RUNS = 3
FEED_BUDGET = 0.05
REPLY_DELTAS = 1000  # a new reply every 0.5 s of stream
PROBE_MS = 5
FRAME_MS = 1000 / 60
QUIET_MS = 8.0
KEY = "bench-stream"
PROFILE_ENV = "HERMES_QT_BENCH_PROFILE"


TABLE_ROWS = 24
CODE_LINES = 60


def delta_text(k: int) -> str:
    """The k-th delta of a reply, as a model writes one: a paragraph, a table growing a row
    at a time (TABLE_ROWS rows), a paragraph, a code block growing a line at a time
    (CODE_LINES lines), then paragraphs with inline markdown to the end of the reply."""
    table_end = 60 + 3 * TABLE_ROWS
    code_start = table_end + 40
    code_end = code_start + 2 * CODE_LINES
    if k < 60:
        return "Here is the **summary** " if k == 0 else f"w{k} "
    if k == 60:
        return "\n\n| # | name | value |\n|---|---|---|\n"
    if k <= table_end:
        r, part = divmod(k - 61, 3)
        return (f"| {r} ", f"| `item{r}` ", f"| {r * 7} |\n")[part]
    if k < code_start:
        return "\n\nNow the code:" if k == table_end + 1 else f" c{k}"
    if k == code_start:
        return "\n\n```python\n"
    if k < code_end:
        return f"total_{k} = compute({k}, scale=2)  # step" if k % 2 else "\n"
    if k == code_end:
        return "\n```\n\nThat is the gist."
    if k % 120 == 0:
        return "\n\n"
    if k % 25 == 0:
        return " **bold** "
    return f" w{k}"


@dataclass(slots=True)
class StreamRun:
    """What one run observed; all times are perf_counter seconds."""

    fed: int = 0
    due_at: list[float] = field(default_factory=list)
    flushes: list[tuple[float, int]] = field(default_factory=list)
    probes: list[float] = field(default_factory=list)


def feed_due(run: StreamRun, start: float, total: int, deliver: Callable[[int], None]) -> int:
    """Deliver every delta of the `total` due by now at RATE from `start` (`deliver(k)` for the
    k-th; at most FEED_BUDGET seconds of them, the rest on the next call), noting when each
    was due; how many were delivered. The app's driver and the bare view's feed alike."""
    now = time.perf_counter()
    due = min(total, int((now - start) * RATE))
    fed = run.fed
    while run.fed < due and time.perf_counter() - now < FEED_BUDGET:
        k = run.fed
        deliver(k)
        run.fed += 1
        run.due_at.append(start + k / RATE)
    return run.fed - fed


def on_screen_latencies(run: StreamRun, paint_ends: list[float]) -> list[float]:
    """For each delta: first paint that ended after a flush covering it, minus when it was due."""
    latencies: list[float] = []
    flushes = run.flushes
    fi = covered = di = 0
    for painted in paint_ends:
        while fi < len(flushes) and flushes[fi][0] <= painted:
            covered = max(covered, flushes[fi][1])
            fi += 1
        while di < covered and di < len(run.due_at):
            latencies.append(painted - run.due_at[di])
            di += 1
    return latencies


async def drive(app: Any) -> None:
    await online(app)
    await listed(app, [KEY])
    clock = PaintClock(app.window)
    await open_session(app, clock, KEY)
    sup = app.core.controllers["embedded"]._sup
    router = app.core.controllers["embedded"]._router
    runtime = router.runtime_id(KEY)
    client = sup.client
    view = app.window.chat_view
    model = view.chat_model
    run = StreamRun()
    model.flushed.connect(lambda _n: run.flushes.append((time.perf_counter(), run.fed)))

    def receive(type_: str, payload: dict[str, Any]) -> None:
        # What the client's read loop does with each received frame.
        client._on_event(
            client._link, decode_frame(encode_event(type_, payload, session_id=runtime))
        )

    start = time.perf_counter() + 0.05
    total = int(DURATION * RATE)
    paints_before = len(clock.ends)

    def deliver(k: int) -> None:
        step = k % REPLY_DELTAS
        if step == 0:
            if k:
                receive("message.complete", {"status": "complete"})
            receive("message.start", {})
        receive("message.delta", {"text": delta_text(step)})

    feeder = QTimer()
    feeder.setTimerType(Qt.TimerType.PreciseTimer)
    feeder.setInterval(1)
    feeder.timeout.connect(lambda: feed_due(run, start, total, deliver))
    prober = QTimer()
    prober.setTimerType(Qt.TimerType.PreciseTimer)
    prober.setInterval(PROBE_MS)
    prober.timeout.connect(lambda: run.probes.append(time.perf_counter()))
    prof = None
    if os.environ.get(PROFILE_ENV):
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    feeder.start()
    prober.start()
    await run_until(start + DURATION + 0.3)
    feeder.stop()
    prober.stop()
    if prof is not None:
        prof.disable()
        write_profile("streaming", prof)
    await until(lambda: not model._dirty, 5, "last deltas painted")
    await asyncio.sleep(0.1)
    gaps = [b - a for a, b in zip(run.probes, run.probes[1:], strict=False)]
    lags = [max(0.0, g - PROBE_MS / 1000) for g in gaps]
    lat = on_screen_latencies(run, clock.ends[paints_before:])
    finish(
        app,
        {
            "delta_p99": percentile(lat, 99),
            "delta_max": max(lat, default=0.0),
            "lag_p99": percentile(lags, 99),
            "stall": max(gaps, default=0.0),
            "on_screen": len(lat) / max(1, run.fed),
            "fed": run.fed,
        },
    )


def run(profile: bool = False) -> dict[str, Any]:
    env = {PROFILE_ENV: "1"} if profile else {}
    return run_app(
        "bench.streaming",
        timeout=DURATION + 120,
        seed=partial(seed, sessions={KEY: 20}),
        env=env,
    )


@contextlib.contextmanager
def one_core_busy() -> Iterator[int]:
    """A busy-loop child process pinned to one core (the last) while the block runs; yields
    the core."""
    core = max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(hog.pid, {core})
        yield core
    finally:
        hog.kill()
        hog.wait()


def floor() -> dict[str, Any]:
    """The same stream shown by a bare Qt text view (bench/streaming_floor.py)."""
    return run_child(["-m", "bench.streaming_floor"], DURATION + 60)


def main() -> int:
    floors: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for _ in range(RUNS):  # each app run next to its floor: a slow spell shows in both
        floors.append(floor())
        runs.append(run())
    with one_core_busy() as core:
        loaded = [run() for _ in range(RUNS)]
    worst = max(runs, key=lambda r: r["delta_p99"])
    worst_floor = max(r["delta_p99"] for r in floors)
    worst_loaded = max(loaded, key=lambda r: r["delta_p99"])
    met = sum(r["delta_p99"] * 1000 <= QUIET_MS for r in runs)
    met_loaded = sum(r["delta_p99"] * 1000 <= FRAME_MS for r in loaded)
    note = ""
    if met < RUNS or met_loaded < RUNS:
        run(profile=True)
        note = "; profile streaming.txt (quiet)"
    each = ", ".join(f"{r['delta_p99'] * 1000:.1f}" for r in runs)
    each_loaded = ", ".join(f"{r['delta_p99'] * 1000:.1f}" for r in loaded)
    each_floor = ", ".join(f"{r['delta_p99'] * 1000:.1f}" for r in floors)
    where = (
        f"python -m desktop, session opened from the window; {worst['fed']:,} deltas in "
        f"{DURATION:g} s per run, new reply every {REPLY_DELTAS} (a {TABLE_ROWS}-row table and a "
        f"{CODE_LINES}-line code block growing in each); frames enter the client's "
        "dispatch (socket and gateway not included)"
    )
    emit(
        [
            Result(
                BENCH,
                f"delta due -> on screen, p99, worst of {RUNS} runs",
                f"<= {QUIET_MS:g} ms in {RUNS} of {RUNS}",
                worst["delta_p99"] * 1000,
                "ms",
                worst_floor * 1000,
                "a bare Qt text view fed the same deltas, before each run",
                met == RUNS,
                f"{met} of {RUNS} runs met; p99 per run {each} ms (bare view: {each_floor}); "
                f"max {worst['delta_max'] * 1000:.1f} ms; {worst['on_screen']:.0%} painted; "
                + where
                + "; the bare view: a QPlainTextEdit in a bare QApplication, same window size, "
                "each delta appended as it is due (bench/streaming_floor.py)" + note,
            ),
            Result(
                BENCH,
                f"delta due -> on screen under load, p99, worst of {RUNS} runs",
                f"<= 1 frame ({FRAME_MS:.1f} ms) in {RUNS} of {RUNS}",
                worst_loaded["delta_p99"] * 1000,
                "ms",
                worst["delta_p99"] * 1000,
                "the quiet runs above, same invocation",
                met_loaded == RUNS,
                f"{met_loaded} of {RUNS} runs met; p99 per run {each_loaded} ms (quiet: {each}); "
                f"max {worst_loaded['delta_max'] * 1000:.1f} ms; "
                f"{worst_loaded['on_screen']:.0%} painted; a busy-loop process pinned to core "
                f"{core} of {os.cpu_count()} throughout; otherwise as the row above",
            ),
            Result(
                BENCH,
                "UI loop lag p99, worst run",
                "<= 16 ms",
                max(r["lag_p99"] for r in runs) * 1000,  # (quiet runs)
                "ms",
                None,
                "",
                max(r["lag_p99"] for r in runs) <= 0.016,
                f"a {PROBE_MS} ms timer's lateness",
            ),
            Result(
                BENCH,
                "longest UI loop stall, worst run",
                "<= 50 ms",
                max(r["stall"] for r in runs) * 1000,
                "ms",
                None,
                "",
                max(r["stall"] for r in runs) <= 0.05,
            ),
        ]
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
