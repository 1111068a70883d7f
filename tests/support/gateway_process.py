"""The embedded gateway as a real process (`python -m desktop.gateway`): start, RSS, stop."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "test-token-123"
PROVIDER = "tests.gateway.scripted:subprocess_provider"


def gateway_command(data_dir: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "desktop.gateway",
        "--port",
        "0",
        "--data-dir",
        str(data_dir),
        "--provider",
        PROVIDER,
        *extra,
    ]


def gateway_env() -> dict[str, str]:
    return {**os.environ, "HERMES_QT_GATEWAY_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}


@contextmanager
def gateway_process(data_dir: Path, *extra: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A started gateway and its URL (after its ready line); killed on exit."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with (data_dir / "stderr.log").open("a") as err:
        proc = subprocess.Popen(
            gateway_command(data_dir, *extra),
            cwd=ROOT,
            env=gateway_env(),
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until the gateway listens (or dies)
        assert line.startswith(
            (
                "HERMES_QT_GATEWAY_READY url=ws://127.0.0.1:",
                "HERMES_QT_GATEWAY_READY url=wss://127.0.0.1:",
            )
        ), line
        yield proc, line.strip().split("url=", 1)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def rss_mb(pid: int) -> float:
    """Resident set size of a process, in MB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for pid {pid}")
