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
    # A new index over the same store starts from the cached list (its newest rows first).
    fresh = SessionIndex("p", store, ManualClock(), lambda *_: None)
    fresh.load_all()
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


def _stored(tmp_path: Path, n: int) -> Store:
    """A store with `n` sessions as a previous run left them, every 7th one pinned."""
    store = Store(tmp_path / "store.sqlite3")
    index = SessionIndex("p", store, ManualClock(), lambda *_: None)
    index.merge_listed(_rows(n))
    for i in range(0, n, 7):
        index.mark(f"s{i}", pinned=True)
    return store


def _every_row(store: Store) -> list[str]:
    whole = SessionIndex("p", store, ManualClock(), lambda *_: None, first_rows=10**9)
    return [s.key for s in whole.summaries()]


def test_a_start_lists_the_newest_rows_and_every_one_when_asked(tmp_path: Path) -> None:
    """10,000 rows took ~0.15 s to read before the window could show: the top of the list
    is read first, the rest once the window is painted, in one update of the list."""
    store = _stored(tmp_path, 500)
    order = _every_row(store)
    lists: list[list[str]] = []

    class Lists(BackendListener):
        def on_sessions(self, sessions: list[SessionSummary]) -> None:
            lists.append([s.key for s in sessions])

    index = SessionIndex("p", store, ManualClock(), lambda call: call(Lists()), first_rows=50)
    shown = [s.key for s in index.summaries()]
    assert shown == order[:50], "the top of the list, pinned chats first"
    assert not index.complete
    index.load_all()
    assert lists == [order], "the whole list, once, in the same order"
    index.load_all()
    assert lists == [order], "nothing new: no update"
    # A gateway list merged before the rest is read compares with every stored row.
    fresh = SessionIndex("p", store, ManualClock(), lambda *_: None, first_rows=10)
    assert fresh.merge_listed(_rows(500), emit=False) == 0, "all known: nothing written"
    store.close()


def test_a_chat_asked_for_is_listed_with_every_chat_above_it(tmp_path: Path) -> None:
    """The chat the window reopens may be far down: it is listed with the rows above it, so
    rows read later only come below and nothing the user sees moves."""
    store = _stored(tmp_path, 300)
    order = _every_row(store)
    index = SessionIndex("p", store, ManualClock(), lambda *_: None, first_rows=20)
    far = order[150]
    summary = index.summary(far)
    assert summary is not None and summary.key == far
    assert [s.key for s in index.summaries()] == order[:151]
    assert index.summary("gone") is None
    assert [s.key for s in index.summaries()] == order[:151]
    store.close()


def test_rows_read_later_keep_what_changed_here_first(tmp_path: Path) -> None:
    """A chat changed before the rest of the list is read (a prompt moved it to the top) is
    listed once, as it is now."""
    store = _stored(tmp_path, 120)
    order = _every_row(store)
    clock = ManualClock()
    index = SessionIndex("p", store, clock, lambda *_: None, first_rows=10)
    pinned = order[0]
    index.turn_ended(pinned)  # a reply came while no window showed it
    index.mark(pinned, pinned=False)  # its stored row now sorts below the rows read so far
    low = order[100]
    clock.advance(10_000.0)
    index.note_prompt(low, "moved up")
    index.rename(order[5], "renamed")
    index.load_all()
    keys = [s.key for s in index.summaries()]
    assert sorted(keys) == sorted(order), "every chat once"
    assert index.summary(pinned).unread == 1  # type: ignore[union-attr]
    assert index.summary(low).preview == "moved up"  # type: ignore[union-attr]
    assert index.summary(order[5]).title == "renamed"  # type: ignore[union-attr]
    store.close()


def test_a_chat_cached_before_it_was_read_is_listed_at_its_new_place(tmp_path: Path) -> None:
    """Caching a chat's messages moves its stored row to the top: it is read first, so the
    rest of the list, read later from where the first rows ended, still holds it."""
    from desktop.core.chats.conversation import Conversation
    from desktop.core.models import ChatMessage, DeliveryState, Role

    store = _stored(tmp_path, 120)
    order = _every_row(store)
    clock = ManualClock()
    index = SessionIndex("p", store, clock, lambda *_: None, first_rows=40)  # past the pins
    low = order[110]
    conv = Conversation(low)
    prompt = ChatMessage(f"{low}:0", Role.USER, "a late question")
    prompt.delivery = DeliveryState.CONFIRMED
    conv.append_local(prompt)
    clock.advance(10_000.0)
    index.cache_conversation(low, conv)
    index.load_all()
    keys = [s.key for s in index.summaries()]
    assert sorted(keys) == sorted(order), "every chat once"
    assert index.summary(low).preview == "a late question"  # type: ignore[union-attr]
    store.close()


def test_a_long_reply_s_list_preview_is_made_from_its_start() -> None:
    """The list's one line for a reply tens of kilobytes long reads its start, as made from the
    whole text, without reducing all of it (~0.3 ms at every turn's end)."""
    from desktop.core.chats import index

    seen: list[int] = []
    real = index._MARKUP

    class Counting:
        def sub(self, repl: Any, text: str) -> str:
            seen.append(len(text))
            return real.sub(repl, text)

    reply = "It is **very** [happy](http://x.org). " + "More `about` quokkas. " * 3000
    whole = " ".join(real.sub(lambda m: m.group(1) or "", reply).split())[:120]
    index._MARKUP = Counting()  # type: ignore[assignment]
    try:
        made = index.preview(reply)
    finally:
        index._MARKUP = real
    assert made == whole
    assert max(seen) <= index.PREVIEW_SOURCE < len(reply), "all of the reply was reduced"
    # Mostly marks at its start: all of it is read, so the line is still full.
    marks = "**" * 2000 + "words " * 100
    assert len(index.preview(marks)) == 120


def test_the_preview_drops_markdown_marks_and_keeps_the_texts_own_characters() -> None:
    from desktop.core.chats import index

    text = "# Fixed\n\n> issue #28 in **file_name.py**: `a > b`, C# and _this_ [here](http://x.io)"
    assert index.preview(text) == "Fixed issue #28 in file_name.py: a > b, C# and this here"
    # A mark standing alone between spaces is the text's own; a list item's is not.
    assert index.preview("Is 5 * 3 = 15, x ** y and a _ b?") == "Is 5 * 3 = 15, x ** y and a _ b?"
    assert index.title_from("* eggs\n* **milk** at 2 * 3 pm `now`") == "eggs milk at 2 * 3 pm now"


def test_a_gateway_title_is_shown_on_one_line_without_markdown_marks(tmp_path: Path) -> None:
    """Hermes 0.20.1 and 0.22 list a model's title as it came ('**Quokka facts**' on both,
    tried by hand), or a whole answer: "Here is a **short answer** ..." (0.22, a fake model)."""
    from desktop.core.chats.conversation import Conversation
    from desktop.core.link.protocol import Event

    store = Store(tmp_path / "store.sqlite3")
    index = SessionIndex("p", store, ManualClock(), lambda *_: None)
    index.merge_listed([{"id": "s1", "title": "**Kitchen tiles**", "updated_at": 1.0}])
    assert index.summary("s1").title == "Kitchen tiles"  # type: ignore[union-attr]
    conv = Conversation("s1")
    title = "Here is a **short answer** with `code`:\n\n1. First point"
    conv.apply(Event(type="session.info", session_id="r", payload={"title": title}))
    index.follow(conv)
    shown = "Here is a short answer with code: 1. First point"
    assert index.summary("s1").title == shown  # type: ignore[union-attr]
    # ...and so it is kept: a restart lists it the same, and C# keeps its mark.
    again = SessionIndex("p", store, ManualClock(), lambda *_: None)
    assert again.summary("s1").title == shown  # type: ignore[union-attr]
    index.merge_listed([{"id": "s1", "title": "C# tips", "updated_at": 2.0}])
    assert index.summary("s1").title == "C# tips"  # type: ignore[union-attr]
    # A chat titled here from its first prompt is titled with its words too.
    index.merge_listed([{"id": "s2", "title": "", "updated_at": 3.0}])
    index.note_prompt("s2", "**Quokka** facts, `please`")
    assert index.summary("s2").title == "Quokka facts, please"  # type: ignore[union-attr]


def test_a_turn_is_cached_after_the_event_that_ended_it_and_at_close_if_still_waiting(
    tmp_path: Path,
) -> None:
    """Writing a long reply and its search index (~1.5 ms) in the event that ended its turn
    held up the frame that showed the reply's last words and the next reply's first ones: the
    turn is cached TURN_CACHE_DELAY later, its preview said then and the chat dated when the
    turn ended; closing writes a turn that still waits; a chat deleted meanwhile is not
    written back."""
    from desktop.core.chats.conversation import Conversation
    from desktop.core.chats.index import TURN_CACHE_DELAY
    from desktop.core.link.protocol import Event

    store = Store(tmp_path / "store.sqlite3")
    clock = ManualClock()
    heard: list[str] = []

    class Lists(BackendListener):
        def on_sessions(self, sessions: list[SessionSummary]) -> None:
            heard.append(next(s.preview for s in sessions if s.key == "s1"))

    index = SessionIndex("p", store, clock, lambda call: call(Lists()))
    index.merge_listed(_rows(3))

    def turn(key: str, reply: str) -> Conversation:
        conv = Conversation(key)
        conv.apply(Event("message.start", "r", {}, 1))
        index.follow(conv)
        conv.apply(Event("message.delta", "r", {"text": reply}, 2))
        conv.apply(Event("message.complete", "r", {"status": "complete"}, 3))
        index.follow(conv)
        return conv

    turn("s1", "the whole reply")
    ended_at = clock.wall()
    assert store.messages("p", "s1") == [], "written in the event that ended the turn"
    clock.advance(TURN_CACHE_DELAY)
    assert [m.text for m in store.messages("p", "s1")] == ["the whole reply"]
    summary = index.summary("s1")
    assert summary is not None and summary.preview == heard[-1] == "the whole reply"
    # Dated when it ended: a chat made since (Ctrl+N) stays above it in the list.
    assert summary.updated_at == ended_at < clock.wall()
    turn("s2", "deleted before it was cached")
    index.remove("s2")
    turn("s0", "cached as the app closes")
    index.cache_ended_turns()
    assert [m.text for m in store.messages("p", "s0")] == ["cached as the app closes"]
    clock.advance(TURN_CACHE_DELAY)
    assert store.messages("p", "s2") == [], "a deleted chat written back"
    store.close()
