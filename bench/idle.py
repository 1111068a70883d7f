"""Idle: CPU of the app and its gateway child, online and idle, vs a bare QApplication + gateway.

`python -m desktop` with its window, store and embedded gateway child, heartbeats at the
app's own settings; the baseline (bare QApplication, qasync loop, the same gateway child, no
client) runs at the same time so both see the same machine load.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

from bench.apprun import run_app
from bench.common import ROOT, Result, child_env, emit
from bench.inapp import cpu_seconds, finish, online, tree

BENCH = "idle"
WINDOW = 30.0


async def drive(app: Any) -> None:
    await online(app)
    await asyncio.sleep(2.0)  # start-up work (session list, caches) settles first
    procs = tree()
    before = cpu_seconds(procs)
    await asyncio.sleep(WINDOW)
    used = cpu_seconds(procs) - before
    finish(app, {"cpu": used, "processes": len(procs)})


def main() -> int:
    base = subprocess.Popen(
        [sys.executable, "-m", "bench.baseline", "--idle", str(WINDOW)],
        cwd=ROOT,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    got = run_app("bench.idle", timeout=WINDOW + 90)
    out, _ = base.communicate(timeout=WINDOW + 60)
    lines = [ln for ln in out.splitlines() if ln.startswith("BENCH_CHILD ")]
    if not lines:
        raise RuntimeError("the idle baseline reported nothing")
    bare = json.loads(lines[-1][len("BENCH_CHILD ") :])
    app_pct = 100.0 * got["cpu"] / WINDOW
    bare_pct = 100.0 * bare["cpu"] / WINDOW
    emit(
        [
            Result(
                BENCH,
                "app + gateway online and idle",
                "<= 1 % of one core",
                app_pct,
                "%",
                bare_pct,
                "bare QApplication + the same gateway, no client",
                app_pct <= 1.0,
                f"python -m desktop on its embedded gateway, empty store, heartbeats at the "
                f"app's settings; {WINDOW:g} s window; CPU of {got['processes']} processes "
                "(app and gateway child)",
            )
        ]
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
