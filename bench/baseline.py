"""The same-run baseline for app figures: a bare QApplication plus the same gateway child."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from bench.inapp import (
    REPORT_DIR_ENV,
    RESULT,
    cpu_seconds,
    tree,
    tree_distinct_mb,
    tree_rss_mb,
)


async def measure(data: Path, idle: float) -> dict[str, Any]:
    from desktop.core.link.launcher import EmbeddedGatewayLauncher

    gateway_dir = data / "data" / "gateway"
    gateway_dir.mkdir(parents=True, exist_ok=True)
    launcher = EmbeddedGatewayLauncher(
        gateway_dir, extra_args=["--config-dir", os.path.join(data, "config")]
    )
    try:
        await launcher.endpoint()
        await asyncio.sleep(1.0)  # start-up work settles first
        procs = tree()
        before = cpu_seconds(procs)
        await asyncio.sleep(idle)
        used = cpu_seconds(procs) - before
        figures: dict[str, Any] = {"rss": tree_rss_mb(), "cpu": used, "window": idle}
        figures["distinct"] = tree_distinct_mb()
        if os.environ.get(REPORT_DIR_ENV):  # a profiling run (bench/memory.py): the split
            from bench.heap import ask, report

            gateway = [pid for pid in tree() if pid != os.getpid()]
            figures["heap"] = {
                "app": report(),
                "gateway": await ask(gateway[0]) if gateway else {},
            }
        return figures
    finally:
        await launcher.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.baseline", description=__doc__)
    p.add_argument("--idle", type=float, default=0.0, help="seconds of idle CPU to measure")
    args = p.parse_args(argv)
    import qasync
    from PySide6.QtWidgets import QApplication, QWidget

    app = QApplication(["bench-baseline"])
    widget = QWidget()
    widget.resize(1000, 700)
    widget.show()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp, loop:
        figures = loop.run_until_complete(measure(Path(tmp), args.idle))
    print(RESULT + json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
