"""Many chats streaming at once: 20 chats open as tabs, each streaming 200 deltas/s, in the app.

`python -m desktop` with its window, store and gateway child; 20 chats seeded in the gateway's
store, each opened in a tab of its own from the window (so routed, as a user who opened them
has them), the first tab then in front and 19 in the background. Every chat then streams
replies at RATE deltas a second (4,000 a second in all): the deltas enter where a received
frame enters the client (decode, then the client's event dispatch, router, conversation,
window), as in bench/streaming.py; the socket and the gateway are the throughput rows. A
new reply every REPLY_DELTAS deltas in each chat (a turn ends and starts: running marks,
tab dots, the running strip). Measured: a 5 ms timer's lateness on the UI loop (its lag) and
the longest stall, while all stream.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import os
import time
from functools import partial
from typing import Any

from PySide6.QtCore import Qt, QTimer

from bench.apprun import run_app
from bench.common import Result, emit, percentile, write_profile
from bench.inapp import finish, in_front, listed, online, run_until, until
from bench.seed import seed
from bench.streaming import delta_text
from desktop.core.link.protocol import decode_frame, encode_event

BENCH = "many_streams"
CHATS = 20
RATE = int(os.environ.get("HERMES_QT_BENCH_MANY_RATE", "200"))  # deltas a second, each chat
DURATION = float(os.environ.get("HERMES_QT_BENCH_STREAM_S", "10"))
FEED_BUDGET = 0.02
REPLY_DELTAS = 400  # a new reply every 2 s of stream, each chat
PROBE_MS = 5
LAG_MS = 16.0
STALL_MS = 50.0
KEYS = [f"bench-many-{k:02d}" for k in range(CHATS)]
PROFILE_ENV = "HERMES_QT_BENCH_PROFILE"


async def open_tabs(app: Any) -> None:
    """Each chat in a tab of its own (the strip's way: a new tab, the chat opened in it), each
    shown; then the first tab in front."""
    window = app.window
    pid = window.profile_id
    for key in KEYS:
        window.tabs.open_in_tab(pid, key)
        await until(in_front(window, key, 1), 60, f"{key} shown")
    window.tabs.go_to(0)
    await until(in_front(window, KEYS[0]), 30, "first tab in front")
    await asyncio.sleep(0.5)


async def drive(app: Any) -> None:
    await online(app)
    await listed(app, KEYS)
    await open_tabs(app)
    window = app.window
    router = app.core.controllers["embedded"]._router
    client = app.core.controllers["embedded"]._sup.client
    runtimes = [router.runtime_id(k) for k in KEYS]
    if not all(runtimes):
        raise RuntimeError(f"not every chat routed: {runtimes}")
    tabs = window.tabs.bar.count()

    # The frames as the gateway sends them (encoding is its work, not the app's): chat c's
    # replies start REPLY_DELTAS / CHATS deltas after chat c - 1's, as chats started apart.
    def frame(runtime: str, type_: str, payload: dict[str, Any]) -> str:
        return encode_event(type_, payload, session_id=runtime)

    deltas = [
        [frame(r, "message.delta", {"text": delta_text(step)}) for step in range(REPLY_DELTAS)]
        for r in runtimes
    ]
    starts = [frame(r, "message.start", {}) for r in runtimes]
    ends = [frame(r, "message.complete", {"status": "complete"}) for r in runtimes]
    shifts = [c * REPLY_DELTAS // CHATS for c in range(CHATS)]
    dispatch = [0.0]  # CPU seconds in the client's dispatch, all frames

    def receive(raw: str) -> None:
        # What the client's read loop does with each received frame.
        t0 = time.thread_time()
        client._on_event(client._link, decode_frame(raw))
        dispatch[0] += time.thread_time() - t0

    start = time.perf_counter() + 0.05
    per_chat = int(DURATION * RATE)
    fed = [0] * CHATS
    probes: list[float] = []
    # Chat c's deltas are due RATE a second, offset by its place so the chats interleave.
    offsets = [c / (RATE * CHATS) for c in range(CHATS)]

    def due(c: int, now: float) -> int:
        return max(0, min(per_chat, int((now - start - offsets[c]) * RATE) + 1))

    # Deltas due but not fed when a turn of the feeder ends: the app not keeping up. Read
    # after each turn, not when the run stops (a stall that happens to span the stop would
    # count what the next turn feeds at once).
    backlog = [0, 0]  # after the last turn, the most after any turn

    def feed() -> None:
        now = time.perf_counter()
        feed_due(now)
        left = sum(due(c, now) - fed[c] for c in range(CHATS))
        backlog[0], backlog[1] = left, max(backlog[1], left)

    def feed_due(now: float) -> None:
        for _ in range(per_chat):  # round-robin over the chats, each to its due count
            moved = False
            for c in range(CHATS):
                if fed[c] >= due(c, now):
                    continue
                k = fed[c]
                step = (k + shifts[c]) % REPLY_DELTAS
                if k == 0 or step == 0:
                    if k:
                        receive(ends[c])
                    receive(starts[c])
                receive(deltas[c][step])
                fed[c] += 1
                moved = True
            if not moved or time.perf_counter() - now > FEED_BUDGET:
                return

    feeder = QTimer()
    feeder.setTimerType(Qt.TimerType.PreciseTimer)
    feeder.setInterval(1)
    feeder.timeout.connect(feed)
    prober = QTimer()
    prober.setTimerType(Qt.TimerType.PreciseTimer)
    prober.setInterval(PROBE_MS)
    prober.timeout.connect(lambda: probes.append(time.perf_counter()))
    prof = None
    if os.environ.get(PROFILE_ENV):
        import cProfile

        prof = cProfile.Profile(time.thread_time)  # CPU time: the machine may be shared
        prof.enable()
    gc_pauses: list[tuple[float, int, float]] = []  # (when, generation, seconds)
    gc_started = [0.0]

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            gc_started[0] = time.perf_counter()
        else:
            now = time.perf_counter()
            gc_pauses.append((now, info["generation"], now - gc_started[0]))

    gc.callbacks.append(on_gc)
    busy0 = time.thread_time()
    feeder.start()
    prober.start()
    await run_until(start + DURATION + 0.3)
    feeder.stop()
    prober.stop()
    gc.callbacks.remove(on_gc)
    if prof is not None:
        prof.disable()
        write_profile("many_streams", prof, top=40)
        if os.environ.get("HERMES_QT_BENCH_PROFILE_DUMP"):
            prof.dump_stats(os.environ["HERMES_QT_BENCH_PROFILE_DUMP"])
    elapsed = time.perf_counter() - start
    busy = (time.thread_time() - busy0) / elapsed
    for end in ends:
        receive(end)
    await asyncio.sleep(0.2)
    gaps = [b - a for a, b in itertools.pairwise(probes)]
    worst = sorted(zip(gaps, probes[1:], strict=False), reverse=True)[:5]
    gc_worst = max((p for _, _, p in gc_pauses), default=0.0)
    lags = [max(0.0, g - PROBE_MS / 1000) for g in gaps]
    finish(
        app,
        {
            "lag_p99": percentile(lags, 99),
            "lag_p50": percentile(lags, 50),
            "stall": max(gaps, default=0.0),
            "fed": sum(fed),
            "behind": backlog[0],
            "behind_most": backlog[1],
            "unfed": CHATS * per_chat - sum(fed),
            "elapsed": elapsed,
            "tabs": tabs,
            "front": window.session_key,
            "busy": busy,
            "per_frame_us": dispatch[0] / max(1, sum(fed)) * 1e6,
            "gc_worst": gc_worst,
            "gc_full": sum(1 for _, g, _ in gc_pauses if g == 2),
            "worst_gaps": [
                (g, [(round(p, 4), n) for t, n, p in gc_pauses if at - g <= t <= at])
                for g, at in worst
            ],
        },
    )


def run(profile: bool = False) -> dict[str, Any]:
    env = {PROFILE_ENV: "1"} if profile else {}
    return run_app(
        "bench.many_streams",
        timeout=DURATION + 180,
        seed=partial(seed, sessions=dict.fromkeys(KEYS, 20)),
        env=env,
    )


def main() -> int:
    got = run()
    lag = got["lag_p99"] * 1000
    stall = got["stall"] * 1000
    note = ""
    if lag > LAG_MS:
        run(profile=True)
        note = "; profile many_streams.txt"
    how = (
        f"python -m desktop, {got['tabs']} chats open as tabs (one in front, "
        f"{got['tabs'] - 1} in the background), each streaming {RATE} deltas/s for "
        f"{DURATION:g} s ({got['fed']:,} deltas fed, {got['behind']:,} due and not fed after the "
        f"feeder's last turn, at most {got['behind_most']:,} after any), "
        f"a new reply every {REPLY_DELTAS} deltas in each; frames enter the client's dispatch "
        f"(socket and gateway not included); a {PROBE_MS} ms timer's lateness, median "
        f"{got['lag_p50'] * 1000:.1f} ms"
    )
    emit(
        [
            Result(
                BENCH,
                f"{CHATS} chats streaming {RATE} deltas/s each: UI loop lag p99",
                f"<= {LAG_MS:g} ms",
                lag,
                "ms",
                None,
                "",
                lag <= LAG_MS and got["behind"] == 0,
                how + note,
            ),
            Result(
                BENCH,
                f"{CHATS} chats streaming {RATE} deltas/s each: longest UI loop stall",
                f"<= {STALL_MS:g} ms",
                stall,
                "ms",
                None,
                "",
                stall <= STALL_MS,
            ),
        ]
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
