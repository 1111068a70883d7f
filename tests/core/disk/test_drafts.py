"""Drafts: debounced autosave on a fake clock, save failures surfaced and retried, restore/undo."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop.common.clock import ManualClock
from desktop.common.retry import RetrySchedule
from desktop.core.disk.drafts import DraftKeeper
from desktop.core.disk.store import DraftRecord, Store
from desktop.core.models import Attachment

IMG = Attachment("c" * 64, "cat.png", "image/png", 10, "/data/attachments/cc/ccc")


class CountingStore(Store):
    """A real store that counts draft writes and can be made to fail them."""

    def __init__(self, path: Path) -> None:
        self.conns: list[sqlite3.Connection] = []

        def connect(p: str) -> sqlite3.Connection:
            conn = sqlite3.connect(p, isolation_level=None)
            self.conns.append(conn)
            return conn

        super().__init__(path, connect=connect)
        self.writes = 0

    def save_draft(self, draft: DraftRecord) -> None:
        self.writes += 1
        super().save_draft(draft)

    def fail_writes(self, on: bool) -> None:
        self.conns[0].execute(f"PRAGMA query_only = {'ON' if on else 'OFF'}")


@pytest.fixture
def store(data_dir: Path) -> Iterator[CountingStore]:
    s = CountingStore(data_dir / "app.db")
    yield s
    s.close()


def _on_disk(path: str, key: str) -> str | None:
    with Store(path) as other:  # a second connection sees only what was committed
        d = other.draft(key)
        return d.text if d else None


def test_a_burst_of_keystrokes_is_saved_once_within_500ms_of_the_last(
    store: CountingStore,
) -> None:
    clock = ManualClock()
    keeper = DraftKeeper(store, clock)
    for i in range(5):
        keeper.update("s1", "hello"[: i + 1], i + 1)
        clock.advance(0.1)  # typing faster than the debounce
    assert store.writes == 0 and clock.pending == 1  # one timer, rescheduled
    clock.advance(0.39)
    assert store.writes == 1
    assert _on_disk(store.path, "s1") == "hello"
    assert keeper.is_saved("s1") and clock.pending == 0
    clock.advance(10)
    assert store.writes == 1  # nothing saved again, no polling


def test_continuous_typing_still_saves_every_max_delay(store: CountingStore) -> None:
    clock = ManualClock()
    keeper = DraftKeeper(store, clock, max_delay=2.0)
    for i in range(30):  # 3 s of typing with no pause longer than 0.1 s
        keeper.update("s1", "x" * (i + 1), i + 1)
        clock.advance(0.1)
    assert store.writes >= 1
    assert (_on_disk(store.path, "s1") or "").startswith("x" * 19)


def test_failed_save_shows_not_saved_keeps_the_draft_and_retries(store: CountingStore) -> None:
    clock = ManualClock()
    keeper = DraftKeeper(store, clock, retry=RetrySchedule(0.5, 30.0))
    states: list[tuple[str, bool, str]] = []
    keeper.on_save_state(lambda k, ok, err: states.append((k, ok, str(err or ""))))
    store.fail_writes(True)
    keeper.update("s1", "precious", 8, [IMG])
    clock.advance(0.4)
    assert states and states[0][:2] == ("s1", False) and "read-only" in states[0][2]
    assert keeper.load("s1").text == "precious"  # memory keeps it
    clock.advance(0.5)  # first retry fails too: no duplicate "not saved" notification
    assert len(states) == 1 and not keeper.is_saved("s1")
    store.fail_writes(False)
    clock.advance(1.0)  # the next backoff slot
    assert states[-1] == ("s1", True, "")
    assert _on_disk(store.path, "s1") == "precious"
    assert clock.pending == 0


def test_flush_saves_at_once_and_load_reads_back_after_restart(store: CountingStore) -> None:
    clock = ManualClock()
    keeper = DraftKeeper(store, clock)
    keeper.update("s1", "draft text", 5, [IMG])
    assert keeper.flush() is True
    again = DraftKeeper(store, ManualClock())
    loaded = again.load("s1")
    assert (loaded.text, loaded.cursor, loaded.attachments) == ("draft text", 5, (IMG,))
    assert again.load("unknown").empty


def test_restore_into_an_empty_composer(store: CountingStore) -> None:
    keeper = DraftKeeper(store, ManualClock())
    result = keeper.restore("s1", "undelivered prompt", [IMG])
    assert not result.merged and result.saved
    assert keeper.load("s1").text == "undelivered prompt"
    assert keeper.load("s1").attachments == (IMG,)
    assert _on_disk(store.path, "s1") == "undelivered prompt"


def test_restore_never_overwrites_a_newer_draft_and_undo_brings_it_back(
    store: CountingStore,
) -> None:
    clock = ManualClock()
    keeper = DraftKeeper(store, clock)
    newer = keeper.update("s1", "something new", 4)
    result = keeper.restore("s1", "the lost prompt", [IMG])
    assert result.merged and result.text == "the lost prompt" and result.attachments == (IMG,)
    assert result.draft.text == "something new\n\nthe lost prompt"
    assert result.draft.cursor == 4  # the user's caret stays in their own text
    assert _on_disk(store.path, "s1") == "something new\n\nthe lost prompt"
    undone = keeper.undo_restore("s1")
    assert undone is not None
    assert (undone.text, undone.cursor, undone.attachments) == ("something new", 4, ())
    assert (undone.updated_at, undone.session_key) == (newer.updated_at, newer.session_key)
    assert _on_disk(store.path, "s1") == "something new"
    assert keeper.undo_restore("s1") is None


def test_restore_that_cannot_be_saved_is_kept_in_memory_and_retried(
    store: CountingStore,
) -> None:
    clock = ManualClock()
    keeper = DraftKeeper(store, clock)
    store.fail_writes(True)
    result = keeper.restore("s1", "prompt", [])
    assert not result.saved and keeper.load("s1").text == "prompt"
    store.fail_writes(False)
    clock.advance(0.5)
    assert _on_disk(store.path, "s1") == "prompt"


def test_adopt_moves_the_new_session_draft(store: CountingStore) -> None:
    clock = ManualClock()
    keeper = DraftKeeper(store, clock)
    keeper.update("new:1", "typed before create", 3)
    adopted = keeper.adopt("new:1", "stored-9")
    assert adopted.text == "typed before create"
    assert keeper.load("stored-9").text == "typed before create"
    assert _on_disk(store.path, "stored-9") == "typed before create"
    assert _on_disk(store.path, "new:1") is None
    keeper.close()
    assert clock.pending == 0
