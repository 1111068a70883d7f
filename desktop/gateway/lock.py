"""One gateway per data dir: an OS file lock held while the process lives (kill -9 frees it)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)
LOCK_NAME = "gateway.lock"


class DataDirInUse(Exception):
    """Another live process holds the data dir's lock."""

    def __init__(self, data_dir: Path, holder: str) -> None:
        who = f" (pid {holder})" if holder else ""
        super().__init__(
            f"another gateway is already using {data_dir}{who}; "
            "stop it first or pass a different --data-dir"
        )


class DataDirLock:
    """`acquire()` or raise DataDirInUse; `release()` (or process exit) frees it."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.path = data_dir / LOCK_NAME
        self._fh: IO[str] | None = None

    def acquire(self, wait: float = 0.0) -> None:
        """Take the lock, retrying for up to `wait` seconds (a predecessor still stopping)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+", encoding="ascii")  # noqa: SIM115 - held until release()
        deadline = time.monotonic() + wait
        waited = False
        while True:
            try:
                _lock(fh)
                break
            except OSError:
                if time.monotonic() < deadline:
                    if not waited:
                        waited = True
                        log.info("the data dir is still locked: waiting up to %.0f s", wait)
                    time.sleep(0.1)
                    continue
                fh.seek(0)
                holder = fh.read().strip()[:20]
                fh.close()
                raise DataDirInUse(self.data_dir, holder) from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            with contextlib.suppress(OSError):
                fh.truncate(0)
            fh.close()


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock(fh: IO[str]) -> None:
        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)

else:
    import fcntl

    def _lock(fh: IO[str]) -> None:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
