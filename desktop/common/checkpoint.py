"""A SQLite store's write-ahead log carried into the database on a thread of its own (the
app's store and the embedded gateway's).

SQLite in WAL mode appends each commit to the log and, by default, copies the log into the
database file in the commit that finds it past 1,000 pages (~4 MB): that commit writes up to
4 MB and waits for the disk to sync it, on the thread that made it (the app's UI thread, the
gateway's event loop: ~5 ms here, far longer on a slow or busy disk), once every few dozen
replies, often in the middle of a streaming reply's frames. A store turns that off (`PRAGMA
wal_autocheckpoint = 0`) and tells a `Checkpointer` of each commit (`after_commit`); at most
once an INTERVAL while commits come, the checkpointer copies the log on its own connection
(`wal_checkpoint(PASSIVE)`: it never makes a writer wait), and the next commit after a full
copy starts the log again from its beginning. Nothing is checkpointed while nothing is
written; closing the store's own connection, the last one, carries in whatever is left.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

INTERVAL = 2.0  # seconds between checkpoints while commits come (read when one is made)
SQLITE_DEFAULT = 1000  # pages: SQLite's own wal_autocheckpoint, for commits without a thread


class Checkpointer:
    """Checkpoints `path`'s log on a thread started at the first commit it hears of, on a
    connection of its own made by `connect` (the store's)."""

    def __init__(self, path: str, connect: Callable[[str], sqlite3.Connection]) -> None:
        self._path = path
        self._interval = INTERVAL
        self._connect = connect
        self._written = threading.Event()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._ran = threading.Condition()
        self.checkpoints = 0
        """Checkpoints run so far."""
        self.failed = False
        """Whether the thread could not open its connection (the store's commits must make
        the checkpoints again, or the log would grow without end)."""

    def written(self) -> None:
        """A commit went into the log: a checkpoint within the interval."""
        if self._closing.is_set():
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="store-checkpoint", daemon=True)
            self._thread.start()
        self._written.set()

    def wait(self, checkpoints: int, timeout: float) -> bool:
        """Wait until `checkpoints` have run (or the thread failed); whether they have."""
        with self._ran:
            self._ran.wait_for(lambda: self.checkpoints >= checkpoints or self.failed, timeout)
            return self.checkpoints >= checkpoints

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running) and close its connection."""
        self._closing.set()
        self._written.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        try:
            conn = self._connect(self._path)
        except sqlite3.Error as exc:
            log.warning("no checkpoints of the store's log (the commits make them): %s", exc)
            with self._ran:
                self.failed = True
                self._ran.notify_all()
            return
        try:
            while True:
                self._written.wait()
                # Commits close together share one checkpoint (the log's growth is bounded
                # by an interval's writes); closing cuts the wait short.
                if self._closing.wait(self._interval):
                    return
                self._written.clear()
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:  # a full disk: the log keeps the commits
                    log.warning("could not checkpoint the store's log: %s", exc)
                with self._ran:
                    self.checkpoints += 1
                    self._ran.notify_all()
        finally:
            conn.close()


def after_commit(checkpoints: Checkpointer | None, conn: sqlite3.Connection) -> Checkpointer | None:
    """Tell `checkpoints` of a commit on `conn`; the checkpointer to tell next time. Where its
    thread could not open a connection, `conn`'s commits checkpoint again (SQLite's default)
    and None is returned: the log would grow without end otherwise."""
    if checkpoints is None:
        return None
    if checkpoints.failed:
        conn.execute(f"PRAGMA wal_autocheckpoint = {SQLITE_DEFAULT:d}")
        return None
    checkpoints.written()
    return checkpoints
