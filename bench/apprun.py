"""Run the real app (`python -m desktop`) with a bench driver inside it and read its figures."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from bench.common import ROOT, child_env

DRIVER_ENV = "HERMES_QT_BENCH_DRIVER"
RESULT = "BENCH_CHILD "


def run_app(
    driver: str,
    *,
    timeout: float,
    seed: Callable[[Path], None] | None = None,
    args: tuple[str, ...] = (),
    on_line: Callable[[str], None] | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Start `python -m desktop --data-dir <fresh dir>` running `driver`; return its report.

    `seed(root)` fills the data dir first (through the stores, never the UI). `on_line` hears
    each line the app prints as it comes (a driver asking for something outside the app, such
    as a fault on its socket). The report gains `spawned`: time.monotonic() just before the
    app process was started.
    """
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        root = Path(tmp)
        if seed is not None:
            seed(root)
        spawned = time.monotonic()
        with tempfile.TemporaryFile("w+", encoding="utf-8") as err_file:
            proc = subprocess.Popen(
                [sys.executable, "-m", "desktop", "--data-dir", str(root), *args],
                cwd=ROOT,
                env=child_env(**{DRIVER_ENV: driver}, **(env or {})),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE if on_line is None else err_file,
                text=True,
            )
            if on_line is None:
                out, err = _communicate(proc, driver, timeout)
            else:
                assert proc.stdout is not None
                out = _follow(proc, proc.stdout, on_line, driver, timeout)
                err_file.seek(0)
                err = err_file.read()
    for line in out.splitlines():
        if line.startswith(RESULT):
            data: dict[str, Any] = json.loads(line[len(RESULT) :])
            data.setdefault("spawned", spawned)  # time.monotonic() when the app was started
            return data
    raise RuntimeError(f"{driver}: app exited {proc.returncode}: {err[-800:]}")


def _communicate(proc: subprocess.Popen[str], driver: str, timeout: float) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()  # the app stops its gateway child on SIGTERM
        try:
            proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        raise RuntimeError(f"{driver}: app did not finish within {timeout:g} s") from None


def _follow(
    proc: subprocess.Popen[str],
    stdout: IO[str],
    on_line: Callable[[str], None],
    driver: str,
    timeout: float,
) -> str:
    """Hand each line of the app's output to `on_line` until it exits; all of it."""
    late = threading.Event()

    def too_late() -> None:
        late.set()
        _stop(proc)

    watchdog = threading.Timer(timeout, too_late)
    watchdog.start()
    lines = []
    try:
        for line in stdout:
            lines.append(line)
            on_line(line.rstrip("\n"))
        proc.wait()
    except BaseException:
        _stop(proc)
        raise
    finally:
        watchdog.cancel()
    if late.is_set():
        raise RuntimeError(f"{driver}: app did not finish within {timeout:g} s")
    return "".join(lines)


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()  # the app stops its gateway child on SIGTERM
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
