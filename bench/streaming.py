"""Streaming: 2,000 deltas/s for 20 s into the real chat view vs a naive repaint-per-delta view."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

from PySide6.QtCore import Qt, QTimer

from bench.common import Result, emit, percentile, write_profile
from bench.qtsupport import PaintTimedChatView, application, pump_until, run_for
from desktop.core.models import ChatMessage, Role

BENCH = "streaming"
RATE = 2000
DURATION = 20.0
NAIVE_DURATION = 3.0
FEED_BUDGET = 0.05
REPLY_DELTAS = 1000  # a new reply (user bubble + assistant bubble) every 0.5 s of stream
PROBE_MS = 5
FRAME = 1 / 60


def delta_text(k: int) -> str:
    """The k-th delta of a reply: words, a paragraph break now and then, some inline markdown."""
    if k % 120 == 119:
        return "\n\n"
    if k % 40 == 39:
        return " `code` "
    if k % 25 == 24:
        return " **bold** "
    return f"w{k % 97:02d} "


@dataclass(slots=True)
class StreamRun:
    """What one run observed; all times are perf_counter seconds."""

    fed: int = 0
    due_at: list[float] = field(default_factory=list)
    flushes: list[tuple[float, int]] = field(default_factory=list)
    probes: list[float] = field(default_factory=list)


def stream_into_view(naive: bool, duration: float) -> tuple[StreamRun, PaintTimedChatView]:
    """Feed deltas on a 1 ms timer at RATE/s; `naive` publishes and repaints every delta."""
    application()
    view = PaintTimedChatView()
    view.resize(900, 700)
    history = [
        ChatMessage(f"h{i}", Role.USER if i % 2 else Role.ASSISTANT, f"earlier message {i}")
        for i in range(20)
    ]
    view.show_messages(history)
    view.show()
    pump_until(lambda: bool(view.paint_ends), 10)
    run = StreamRun()
    model = view.chat_model
    if not naive:
        model.flushed.connect(lambda _n: run.flushes.append((time.perf_counter(), run.fed)))
    current: list[ChatMessage] = []
    start = time.perf_counter() + 0.05
    total = int(duration * RATE)

    def feed() -> None:
        now = time.perf_counter()
        due = min(total, int((now - start) * RATE))
        # A tick never works longer than FEED_BUDGET: a view that cannot keep up falls behind
        # (its deltas show late or never) instead of freezing the run.
        while run.fed < due and time.perf_counter() - now < FEED_BUDGET:
            k = run.fed
            step = k % REPLY_DELTAS
            if step == 0:
                turn = k // REPLY_DELTAS
                view.update_message(ChatMessage(f"u{turn}", Role.USER, f"question {turn}"))
                current[:] = [ChatMessage(f"a{turn}", Role.ASSISTANT, "", streaming=True)]
                view.update_message(current[0])
            msg = current[0]
            msg.text += delta_text(step)
            view.update_message(msg)
            run.fed += 1
            run.due_at.append(start + k / RATE)
            if naive:
                model.flush()
                run.flushes.append((time.perf_counter(), run.fed))
                view.viewport().repaint()

    def probe() -> None:
        run.probes.append(time.perf_counter())

    feeder = QTimer()
    feeder.setTimerType(Qt.TimerType.PreciseTimer)
    feeder.setInterval(1)
    feeder.timeout.connect(feed)
    prober = QTimer()
    prober.setTimerType(Qt.TimerType.PreciseTimer)
    prober.setInterval(PROBE_MS)
    prober.timeout.connect(probe)
    feeder.start()
    prober.start()
    run_for(duration + 0.3)
    feeder.stop()
    prober.stop()
    pump_until(lambda: not model._dirty, 2)
    view.hide()
    return run, view


def on_screen_latencies(run: StreamRun, paint_ends: list[float]) -> list[float]:
    """For each delta: first paint that ended after a flush covering it, minus when it was due."""
    latencies: list[float] = []
    flushes = run.flushes
    fi = 0
    covered = 0  # deltas published by flushes before the current paint
    di = 0
    for painted in paint_ends:
        while fi < len(flushes) and flushes[fi][0] <= painted:
            covered = max(covered, flushes[fi][1])
            fi += 1
        while di < covered and di < len(run.due_at):
            latencies.append(painted - run.due_at[di])
            di += 1
    return latencies


@dataclass(frozen=True, slots=True)
class Figures:
    lag_p99_ms: float
    stall_max_ms: float
    delta_p99_ms: float
    delta_max_ms: float
    on_screen: float
    fed: int


def figures(run: StreamRun, view: PaintTimedChatView) -> Figures:
    gaps = [b - a for a, b in zip(run.probes, run.probes[1:], strict=False)]
    lags = [max(0.0, g - PROBE_MS / 1000) * 1000 for g in gaps]
    lat = on_screen_latencies(run, view.paint_ends)
    return Figures(
        lag_p99_ms=percentile(lags, 99),
        stall_max_ms=max(gaps, default=0.0) * 1000,
        delta_p99_ms=percentile(lat, 99) * 1000,
        delta_max_ms=max(lat, default=0.0) * 1000,
        on_screen=len(lat) / max(1, run.fed),
        fed=run.fed,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.streaming")
    p.add_argument("--duration", type=float, default=DURATION)
    p.add_argument("--naive-duration", type=float, default=NAIVE_DURATION)
    args = p.parse_args(argv)
    import cProfile

    prof = cProfile.Profile()
    prof.enable()
    run, view = stream_into_view(False, args.duration)
    prof.disable()
    real = figures(run, view)
    base_run, base_view = stream_into_view(True, args.naive_duration)
    naive = figures(base_run, base_view)
    where = (
        f"{real.fed} deltas in {args.duration:g} s, new reply every {REPLY_DELTAS}; naive "
        f"baseline {args.naive_duration:g} s, {naive.fed} deltas; {real.on_screen:.0%} painted"
    )
    rows = [
        Result(
            BENCH,
            "UI loop lag p99",
            "<= 16 ms",
            real.lag_p99_ms,
            "ms",
            naive.lag_p99_ms,
            "naive repaint per delta",
            real.lag_p99_ms <= 16,
            where,
        ),
        Result(
            BENCH,
            "longest UI loop stall",
            "<= 50 ms",
            real.stall_max_ms,
            "ms",
            naive.stall_max_ms,
            "naive repaint per delta",
            real.stall_max_ms <= 50,
        ),
        Result(
            BENCH,
            "delta due -> on screen, p99",
            f"<= 1 frame ({FRAME * 1000:.1f} ms)",
            real.delta_p99_ms,
            "ms",
            naive.delta_p99_ms,
            "naive repaint per delta",
            real.delta_p99_ms <= FRAME * 1000,
            f"max {real.delta_max_ms:.1f} ms; a batch of updates per paint",
        ),
    ]
    if not all(r.met for r in rows):
        path = write_profile("streaming", prof)
        rows = [
            r
            if r.met
            else Result(**{**r.to_json(), "note": f"{r.note}; profile {path.name}".lstrip("; ")})
            for r in rows
        ]
    emit(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
