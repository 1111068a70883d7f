"""Bench only: bench/heap.py puts this directory on PYTHONPATH so that a process it did not
start itself (the app's gateway child) answers SIGUSR1 with its heap report.

Nothing is imported until the signal comes: the process measured carries only this module.
"""

from __future__ import annotations

import os
import signal
from types import FrameType

_DIR = os.environ.get("HERMES_QT_BENCH_HEAP_DIR", "")


def _answer(signum: int, frame: FrameType | None) -> None:
    import json

    from bench.heap import report

    path = os.path.join(_DIR, f"{os.getpid()}.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(report(), f)
    os.replace(path + ".tmp", path)


if _DIR:
    signal.signal(signal.SIGUSR1, _answer)
