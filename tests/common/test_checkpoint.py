"""A store's log is carried into the database on a thread of its own, never in a commit the
UI thread (the app's store) or the event loop (the embedded gateway's) waits for; nothing is
lost, and without that thread the commits do it again."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from desktop.common import checkpoint
from desktop.core.disk.store import CachedMessage, Store
from desktop.gateway.sessions.store import Store as GatewayStore

ROWS = 50
TEXT = "words of a long reply " * 200  # ~4.4 KB
COMMITS = 30  # ~6.5 MB of rows, past SQLite's own 1,000-page (~4 MB) checkpoint


def _write(store: Store, commits: int = COMMITS) -> None:
    for c in range(commits):
        rows = [CachedMessage(c * ROWS + i, "assistant", f"{c}-{i} {TEXT}") for i in range(ROWS)]
        store.replace_messages("p", f"s{c}", rows)


def _rows(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    finally:
        conn.close()


def _wal(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def _gateway_writes(path: Path) -> GatewayStore:
    store = GatewayStore(path)
    if store.get_session("s") is None:
        store.create_session("s", "chat", "test", 0.0)
    return store


def _write_replies(store: GatewayStore) -> None:
    for c in range(COMMITS):
        store.import_messages("s", [("assistant", f"{c}-{i} {TEXT}", c) for i in range(ROWS)])


def _open(side: str, path: Path) -> Store | GatewayStore:
    return Store(path) if side == "app" else _gateway_writes(path)


def _fill(store: Store | GatewayStore) -> None:
    if isinstance(store, Store):
        _write(store)
    else:
        _write_replies(store)


@pytest.mark.parametrize("side", ["app", "gateway"])
def test_commits_leave_the_log_to_the_checkpointer_and_lose_nothing(
    side: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With SQLite's default, the commit that found the log past 1,000 pages copied it in (and
    # waited for the disk) on the thread that made it: the app's UI thread; the gateway's
    # event loop, between the deltas of a reply it streams.
    monkeypatch.setattr(checkpoint, "INTERVAL", 3600.0)  # it does not get to run here
    path = data_dir / "store.sqlite3"
    store = _open(side, path)
    before = path.stat().st_size
    _fill(store)
    assert path.stat().st_size == before, "a commit copied the log into the database"
    assert _wal(path).stat().st_size > 4 * 2**20
    store.close()  # the last connection closed carries the log in
    assert path.stat().st_size > before
    assert _rows(path) == COMMITS * ROWS
    # Told of each commit, the thread carries the log in while the store is open.
    monkeypatch.setattr(checkpoint, "INTERVAL", 0.0)
    store = _open(side, path)
    before = path.stat().st_size
    _fill(store)
    assert store._checkpoints is not None and store._checkpoints.wait(1, timeout=30)
    assert path.stat().st_size > before, "nothing carried in while the store was open"
    written = _rows(path)
    store.close()
    assert _rows(path) == written


def test_the_checkpointer_carries_the_log_in_on_its_own_thread(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint, "INTERVAL", 0.0)
    path = data_dir / "store.sqlite3"
    ran: list[str] = []
    real = sqlite3.Connection.execute

    class Watched(sqlite3.Connection):
        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
            if "wal_checkpoint" in sql:
                ran.append(threading.current_thread().name)
            return real(self, sql, *args)

    store = Store(path, connect=lambda p: sqlite3.connect(p, factory=Watched))
    before = path.stat().st_size
    _write(store)
    assert store._checkpoints is not None and store._checkpoints.wait(1, timeout=30)
    assert path.stat().st_size > before, "nothing carried in while the store was open"
    assert set(ran) == {"store-checkpoint"}
    thread = store._checkpoints._thread
    store.close()
    assert _rows(path) == COMMITS * ROWS
    assert thread is not None and not thread.is_alive(), "the store closed, its thread runs on"


def test_without_a_connection_of_its_own_the_commits_checkpoint_again(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = data_dir / "store.sqlite3"
    made: list[str] = []

    def second_refused(path: str) -> sqlite3.Connection:
        if made:  # (the checkpointer's: the store's own is the first)
            raise sqlite3.OperationalError("unable to open database file")
        made.append(path)
        return sqlite3.connect(path)

    store = Store(path, connect=second_refused)
    before = path.stat().st_size
    assert store._checkpoints is not None
    checkpoints = store._checkpoints
    _write(store, 1)
    assert not checkpoints.wait(1, timeout=30) and checkpoints.failed
    _write(store)  # the log would grow without end: SQLite's default carries it in
    assert path.stat().st_size > before
    store.close()
    assert _rows(path) == COMMITS * ROWS
