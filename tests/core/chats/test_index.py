"""The session index: listing results merged into the store, incrementally."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop.common.clock import ManualClock
from desktop.core.chats.index import SessionIndex
from desktop.core.disk.store import Store
from desktop.core.listeners import BackendListener
from desktop.core.models import SessionSummary


def _rows(n: int, title: str = "chat") -> list[dict[str, Any]]:
    return [{"id": f"s{i}", "title": f"{title} {i}", "updated_at": 1.0 + i} for i in range(n)]


def test_listing_known_sessions_again_writes_nothing_and_a_change_one_row(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.sqlite3")
    lists: list[int] = []

    class ListSizes(BackendListener):
        def on_sessions(self, sessions: list[SessionSummary]) -> None:
            lists.append(len(sessions))

    index = SessionIndex("p", store, ManualClock(), lambda call: call(ListSizes()))
    assert index.merge_listed(_rows(500)) == 500
    assert len(store.sessions("p")) == 500
    assert index.merge_listed(_rows(500), emit=False) == 0, "nothing new: no store write"
    assert lists == [500], "and nothing sent to the window"
    changed = _rows(500)
    changed[7]["title"] = "renamed elsewhere"
    assert index.merge_listed(changed) == 1
    assert [h.session_key for h in store.search("p", "renamed")] == ["s7"]
    # A new index over the same store starts from the cached list.
    fresh = SessionIndex("p", store, ManualClock(), lambda *_: None)
    assert len(fresh.summaries()) == 500
    store.close()
