"""Run the real app (`python -m desktop`) with a bench driver inside it and read its figures."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import ROOT, child_env

DRIVER_ENV = "HERMES_QT_BENCH_DRIVER"


def run_app(
    driver: str,
    *,
    timeout: float,
    seed: Callable[[Path], None] | None = None,
    args: tuple[str, ...] = (),
    **env: str,
) -> dict[str, Any]:
    """Start `python -m desktop --data-dir <fresh dir>` running `driver`; return its report.

    `seed(root)` fills the data dir first (through the stores, never the UI). The report
    gains `spawned`: time.monotonic() just before the app process was started.
    """
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        root = Path(tmp)
        if seed is not None:
            seed(root)
        spawned = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "desktop", "--data-dir", str(root), *args],
            cwd=ROOT,
            env=child_env(**{DRIVER_ENV: driver}, **env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()  # the app stops its gateway child on SIGTERM
            try:
                out, err = proc.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            raise RuntimeError(f"{driver}: app did not finish within {timeout:g} s") from None
    for line in out.splitlines():
        if line.startswith("BENCH_CHILD "):
            data: dict[str, Any] = json.loads(line[len("BENCH_CHILD ") :])
            data.setdefault("spawned", spawned)  # time.monotonic() when the app was started
            return data
    raise RuntimeError(f"{driver}: app exited {proc.returncode}: {err[-800:]}")
