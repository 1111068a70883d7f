"""Start-up: process start to first painted window and to online with the embedded gateway.

`python -m desktop` prints `FIRST_PAINT <monotonic>` and `ONLINE <monotonic>` when
HERMES_QT_BENCH_STARTUP=1; both are timed from the moment the process is spawned.
"""

from __future__ import annotations

import argparse
import select
import subprocess
import sys
import tempfile
import time

from bench.common import ROOT, Result, child_env, child_report, emit, run_child, skipped

BENCH = "startup"
HOOK_ENV = "HERMES_QT_BENCH_STARTUP"
RUNS = 3
NO_HOOK = "the app printed no FIRST_PAINT/ONLINE lines"


def app_hook(timeout: float = 20.0) -> tuple[float, float] | None:
    """(first paint, online) seconds after spawning `python -m desktop`, or None without hooks."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "desktop", "--data-dir", tmp],
            cwd=ROOT,
            env=child_env(**{HOOK_ENV: "1"}),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        marks: dict[str, float] = {}
        try:
            assert proc.stdout is not None
            deadline = started + timeout
            # An app without the hook may run silently: never block past the deadline.
            while len(marks) < 2 and (remaining := deadline - time.monotonic()) > 0:
                readable, _, _ = select.select([proc.stdout], [], [], remaining)
                if not readable:
                    break
                line = proc.stdout.readline()
                if not line:
                    break
                word, _, value = line.strip().partition(" ")
                if word in ("FIRST_PAINT", "ONLINE"):
                    marks[word] = float(value) - started
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if len(marks) < 2:
            return None
        return marks["FIRST_PAINT"], marks["ONLINE"]


def child_bare(spawned: float) -> dict[str, float]:
    from PySide6.QtWidgets import QWidget

    from bench.qtsupport import application, pump_until

    application()
    painted: list[float] = []

    class Probe(QWidget):
        def paintEvent(self, _e: object) -> None:
            painted.append(time.monotonic())

    w = Probe()
    w.resize(1000, 700)
    w.show()
    pump_until(lambda: bool(painted), 10)
    return {"first_paint": painted[0] - spawned}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.startup")
    p.add_argument("--child", choices=["bare"])
    p.add_argument("--spawned", type=float, default=0.0)
    args = p.parse_args(argv)
    if args.child:
        child_report(child_bare(args.spawned))
        return 0

    def spawn(kind: str) -> dict[str, float]:
        return run_child(
            ["-m", "bench.startup", "--child", kind, "--spawned", repr(time.monotonic())], 60
        )

    bare = min(spawn("bare")["first_paint"] for _ in range(RUNS))
    hooked = [h for h in (app_hook() for _ in range(RUNS)) if h is not None]
    if not hooked:
        emit([skipped(BENCH, "process start -> first painted window", "<= 0.8 s", NO_HOOK)])
        return 0
    first = min(h[0] for h in hooked)
    online = min(h[1] for h in hooked)
    how = f"python -m desktop with {HOOK_ENV}=1, empty data dir; best of {len(hooked)} runs"
    emit(
        [
            Result(
                BENCH,
                "process start -> first painted window",
                "<= 0.8 s",
                first,
                "s",
                bare,
                "bare PySide6 QWidget",
                first <= 0.8,
                how,
            ),
            Result(
                BENCH,
                "process start -> online (embedded gateway)",
                "<= 1.5 s",
                online,
                "s",
                bare,
                "bare PySide6 QWidget first paint",
                online <= 1.5,
            ),
        ]
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
