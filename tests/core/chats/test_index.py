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


def test_a_users_rename_wins_over_every_title_the_gateway_sends_later(tmp_path: Path) -> None:
    """Hermes 0.20.1's auto-title finishing after a rename once put its title back."""
    from desktop.core.chats.conversation import Conversation
    from desktop.core.link.protocol import Event

    store = Store(tmp_path / "store.sqlite3")
    index = SessionIndex("p", store, ManualClock(), lambda *_: None)
    index.merge_listed([{"id": "s1", "title": "", "updated_at": 1.0}])
    conv = Conversation("s1")
    # Before any rename the gateway's titles are taken: a session.title event...
    conv.apply(Event(type="session.title", session_id="r", payload={"title": "Auto one"}))
    index.follow(conv)
    assert index.summary("s1").title == "Auto one"  # type: ignore[union-attr]
    # ...or (Hermes 0.19-0.22, which send no session.title event) session.info's title.
    hermes = Conversation("s1")
    hermes.apply(Event(type="session.info", session_id="r", payload={"title": "Hermes title"}))
    index.follow(hermes)
    assert index.summary("s1").title == "Hermes title"  # type: ignore[union-attr]
    index.rename("s1", "Mine", user_title="Mine")
    # Then the auto-title lands, a stale session.info comes, and session.list carries it.
    conv.apply(Event(type="session.title", session_id="r", payload={"title": "Auto two"}))
    index.follow(conv)
    index.follow(hermes)
    assert index.summary("s1").title == "Mine"  # type: ignore[union-attr]
    index.merge_listed([{"id": "s1", "title": "Auto two", "updated_at": 2.0}])
    assert index.summary("s1").title == "Mine"  # type: ignore[union-attr]
    # And after a restart.
    fresh = SessionIndex("p", store, ManualClock(), lambda *_: None)
    fresh.merge_listed([{"id": "s1", "title": "Auto two", "updated_at": 3.0}])
    assert fresh.summary("s1").title == "Mine"  # type: ignore[union-attr]
    store.close()


def test_a_running_chats_row_is_made_once_and_follows_each_mark(tmp_path: Path) -> None:
    """The list and the tabs ask for a running chat's row at every turn's start and end in any
    chat (20 chats streaming: 22,000 copies of a summary in 10 s); it is made once per change,
    and each change of its running or unread mark shows at once."""
    store = Store(tmp_path / "store.sqlite3")
    index = SessionIndex("p", store, ManualClock(), lambda *_: None)
    index.merge_listed(_rows(2))
    state = index.get("s1")
    assert state is not None
    state.running = True
    first = index.summary("s1")
    assert first is not None and first.running
    assert index.summary("s1") is first, "made again though nothing changed"
    assert next(s for s in index.summaries() if s.key == "s1") is first
    state.unread = 2
    second = index.summary("s1")
    assert second is not None and second.running and second.unread == 2
    state.running = False
    third = index.summary("s1")
    assert third is not None and not third.running and third.unread == 2
    index.rename("s1", "renamed")
    assert index.summary("s1").title == "renamed"  # type: ignore[union-attr]
    store.close()
