"""Idle: CPU of a connected client (Qt + qasync + heartbeats) vs an idle bare asyncio loop."""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, Result, child_env, child_report, emit

BENCH = "idle"
WINDOW = 20.0
# 60 s with a 15 s heartbeat, scaled to the window: the same number of pings.
HEARTBEAT = 15.0 * WINDOW / 60.0


def cpu() -> float:
    # Nanosecond process CPU clock: os.times ticks at 10 ms, too coarse for an idle process.
    return time.process_time()


def child_bare() -> dict[str, float]:
    async def idle() -> float:
        before = cpu()
        await asyncio.sleep(WINDOW)
        return cpu() - before

    return {"cpu": asyncio.run(idle())}


def child_client() -> dict[str, float]:
    import qasync

    from bench.qtsupport import PaintTimedChatView, application, pump_until
    from desktop.core.gateway import JsonRpcGatewayClient
    from desktop.core.launcher import EmbeddedGatewayLauncher

    app = application()
    view = PaintTimedChatView()
    view.resize(900, 700)
    view.show()
    pump_until(lambda: bool(view.paint_ends), 10)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)

    async def idle() -> dict[str, float]:
        with tempfile.TemporaryDirectory() as tmp:
            launcher = EmbeddedGatewayLauncher(
                Path(tmp), extra_args=["--config-dir", os.path.join(tmp, "config")]
            )
            try:
                endpoint = await launcher.endpoint()
                client = JsonRpcGatewayClient(
                    endpoint.url, token=endpoint.token, heartbeat_interval=HEARTBEAT
                )
                await client.connect()
                await asyncio.sleep(1.0)  # start-up work settles first
                before = cpu()
                await asyncio.sleep(WINDOW)
                used = cpu() - before
                pings = float(len(client.heartbeat_rtts))
                await client.close()
                return {"cpu": used, "pings": pings}
            finally:
                await launcher.close()

    with loop:
        figures: dict[str, float] = loop.run_until_complete(idle())
        return figures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.idle")
    p.add_argument("--child", choices=["bare", "client"])
    args = p.parse_args(argv)
    if args.child:
        child_report(child_bare() if args.child == "bare" else child_client())
        return 0
    # Both run at once: same machine load, half the wall time.
    procs = {
        kind: subprocess.Popen(
            [sys.executable, "-m", "bench.idle", "--child", kind],
            cwd=ROOT,
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for kind in ("bare", "client")
    }
    import json

    out: dict[str, dict[str, float]] = {}
    for kind, proc in procs.items():
        stdout, _ = proc.communicate(timeout=WINDOW + 40)
        for line in stdout.splitlines():
            if line.startswith("BENCH_CHILD "):
                out[kind] = json.loads(line[len("BENCH_CHILD ") :])
    if "client" not in out or "bare" not in out:
        raise RuntimeError(f"idle children failed: got {sorted(out)}")
    client = 100.0 * out["client"]["cpu"] / WINDOW
    bare = 100.0 * out["bare"]["cpu"] / WINDOW
    emit(
        [
            Result(
                BENCH,
                "connected and idle, heartbeats on",
                "<= 1 % of one core",
                client,
                "%",
                bare,
                "idle bare asyncio loop",
                client <= 1.0,
                f"{WINDOW:g} s window, heartbeat {HEARTBEAT:g} s (15 s per 60 s, scaled), "
                f"{out['client'].get('pings', 0):.0f} pings; Qt + qasync + chat view + client; "
                "process_time of the client process (gateway child not counted)",
            )
        ]
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
