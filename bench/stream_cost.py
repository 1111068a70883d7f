"""Streaming's cost in the app, robust to a shared machine: UI-thread CPU and counts.

Not a row of the bench: a probe for finding what a delta or a frame costs when wall-clock
figures are noise (other processes on the cores). `python -m desktop` as bench.streaming runs
it, the same replies (bench.streaming.delta_text), but fed synchronously: after each frame's
worth of deltas (RATE / 60) the chat model is flushed and the chat view repainted at once.
Reported: UI-thread CPU (time.thread_time) per delta fed and per frame, by the reply's part
(p1 paragraph, table, p2 paragraph, code, tail paragraphs), and with --profile the calls per
delta of everything called at least once per two deltas (cProfile counts: deterministic);
with --frames, a profile of the frames alone (flush and repaint): the calls costing most per
frame, and the reply's boundaries (message.start and message.complete) timed apart.

    python -m bench.stream_cost [--profile | --frames [--part p1|table|p2|code|tail]]
"""

from __future__ import annotations

import asyncio
import cProfile
import json
import os
import pstats
import sys
import time
from functools import partial
from typing import Any

from bench.apprun import run_app
from bench.inapp import PaintClock, finish, listed, online
from bench.memory import open_session
from bench.seed import seed
from bench.streaming import KEY, RATE, REPLY_DELTAS, TABLE_ROWS, delta_text
from desktop.core.link.protocol import decode_frame, encode_event

# Deltas per frame: 60 frames/s, or as many as HERMES_QT_BENCH_COST_PER_FRAME says (the real
# bench paints more often than 60/s on a quick machine: fewer deltas per frame).
PER_FRAME = int(os.environ.get("HERMES_QT_BENCH_COST_PER_FRAME", RATE // 60))
REPLIES = 2
PROFILE_ENV = "HERMES_QT_BENCH_COST_PROFILE"
FRAMES_ENV = "HERMES_QT_BENCH_COST_FRAMES"
PART_ENV = "HERMES_QT_BENCH_COST_PART"


def part(k: int) -> str:
    """Which part of a reply (bench.streaming.delta_text) delta k writes."""
    table_end = 60 + 3 * TABLE_ROWS
    if k < 60:
        return "p1"
    if k <= table_end:
        return "table"
    if k < table_end + 40:
        return "p2"
    if k <= table_end + 160:
        return "code"
    return "tail"


def _means(spent: dict[str, list[float]], scale: float) -> dict[str, float]:
    out = {p: round(sum(v) / len(v) * scale, 2) for p, v in spent.items()}
    every = [x for v in spent.values() for x in v]
    out["all"] = round(sum(every) / len(every) * scale, 2)
    return out


async def drive(app: Any) -> None:
    await online(app)
    await listed(app, [KEY])
    await open_session(app, PaintClock(app.window), KEY)
    controller = app.core.controllers["embedded"]
    runtime = controller._router.runtime_id(KEY)
    client = controller._sup.client
    model = app.window.chat_view.chat_model
    viewport = app.window.chat_view.viewport()

    def receive(type_: str, payload: dict[str, Any]) -> None:
        client._on_event(
            client._link, decode_frame(encode_event(type_, payload, session_id=runtime))
        )

    prof = cProfile.Profile() if os.environ.get(PROFILE_ENV) else None
    frame_prof = cProfile.Profile() if os.environ.get(FRAMES_ENV) else None
    fed: dict[str, list[float]] = {}
    frames: dict[str, list[float]] = {}
    bounds: dict[str, list[float]] = {}

    bound_prof = cProfile.Profile() if os.environ.get(FRAMES_ENV) else None
    only = os.environ.get(PART_ENV)  # frames of this part alone in the frame profile

    def boundary(type_: str, payload: dict[str, Any]) -> None:
        if bound_prof is not None:
            bound_prof.enable()
        t0 = time.thread_time()
        receive(type_, payload)
        bounds.setdefault(type_, []).append(time.thread_time() - t0)
        if bound_prof is not None:
            bound_prof.disable()

    await asyncio.sleep(0.2)
    if prof is not None:
        prof.enable()
    begun = time.thread_time()
    for _ in range(REPLIES):
        boundary("message.start", {})
        for k in range(REPLY_DELTAS):
            t0 = time.thread_time()
            receive("message.delta", {"text": delta_text(k)})
            fed.setdefault(part(k), []).append(time.thread_time() - t0)
            if k % PER_FRAME == PER_FRAME - 1:
                profiled = frame_prof if only in (None, part(k)) else None
                if profiled is not None:
                    profiled.enable()
                t0 = time.thread_time()
                model.flush()
                viewport.repaint()
                frames.setdefault(part(k), []).append(time.thread_time() - t0)
                if profiled is not None:
                    profiled.disable()
                await asyncio.sleep(0.002)  # the loop's own work (timers, posted events)
        boundary("message.complete", {"status": "complete"})
        await asyncio.sleep(0.05)
    total = time.thread_time() - begun
    if prof is not None:
        prof.disable()
    deltas = REPLIES * REPLY_DELTAS
    out: dict[str, Any] = {
        "cpu_us_per_delta": round(total / deltas * 1e6, 1),
        "fed_us_per_delta": _means(fed, 1e6),
        "frame_ms": _means(frames, 1e3),
        "frame_max_ms": {p: round(max(v) * 1e3, 2) for p, v in frames.items()},
        "boundary_ms": {t: round(sum(v) / len(v) * 1e3, 2) for t, v in bounds.items()},
    }
    if prof is not None:
        stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
        calls = [
            (f"{os.path.basename(f)}:{line}({fn})", round(n / deltas, 3), round(cum, 3))
            for (f, line, fn), (_cc, n, _tt, cum, _callers) in stats.items()
            if n / deltas >= 0.5
        ]
        out["calls_per_delta"] = sorted(calls, key=lambda c: -c[2])
    if frame_prof is not None:
        n_frames = len(frames[only]) if only else sum(len(v) for v in frames.values())
        stats = pstats.Stats(frame_prof).stats  # type: ignore[attr-defined]
        per_frame = [
            (f"{os.path.basename(f)}:{line}({fn})", round(n / n_frames, 2), cum / n_frames * 1e3)
            for (f, line, fn), (_cc, n, _tt, cum, _callers) in stats.items()
        ]
        out["calls_per_frame"] = sorted(per_frame, key=lambda c: -c[2])[:60]
    if bound_prof is not None:
        n_bounds = sum(len(v) for v in bounds.values())
        stats = pstats.Stats(bound_prof).stats  # type: ignore[attr-defined]
        per_bound = [
            (f"{os.path.basename(f)}:{line}({fn})", round(n / n_bounds, 2), cum / n_bounds * 1e3)
            for (f, line, fn), (_cc, n, _tt, cum, _callers) in stats.items()
        ]
        out["calls_per_boundary"] = sorted(per_bound, key=lambda c: -c[2])[:50]
    finish(app, out)


def main() -> int:
    env = {PROFILE_ENV: "1"} if "--profile" in sys.argv else {}
    if "--frames" in sys.argv:
        env[FRAMES_ENV] = "1"
    if "--part" in sys.argv:  # --part p2: the frame profile of that part's frames alone
        env[PART_ENV] = sys.argv[sys.argv.index("--part") + 1]
    res = run_app("bench.stream_cost", timeout=300, seed=partial(seed, sessions={KEY: 20}), env=env)
    for name, n, cum in res.pop("calls_per_delta", []):
        print(f"{n:8.3f}/delta {cum:8.3f} s  {name}")
    for name, n, cum in res.pop("calls_per_frame", []):
        print(f"{n:8.2f}/frame {cum:8.3f} ms  {name}")
    for name, n, cum in res.pop("calls_per_boundary", []):
        print(f"{n:8.2f}/boundary {cum:8.3f} ms  {name}")
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
