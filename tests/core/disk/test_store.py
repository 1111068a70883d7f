"""The local store: migrations with data in them, sessions, the message cache, search, faults."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from desktop.core.disk.migrations import LATEST, MIGRATIONS, migrate, user_version
from desktop.core.disk.store import CachedMessage, DraftRecord, OutboxEntry, Store
from desktop.core.errors import StorageError, StorageFullError, StorageReadOnlyError
from desktop.core.models import Attachment, DeliveryState


def _conn(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def _at_version(path: Path, version: int) -> sqlite3.Connection:
    conn = _conn(path)
    migrate(conn, version)
    assert user_version(conn) == version
    return conn


def test_fresh_store_is_at_latest_version_in_wal_mode(data_dir: Path) -> None:
    with Store(data_dir / "app.db") as store:
        assert store.version == LATEST == len(MIGRATIONS)
        assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_migration_1_keeps_nothing_and_creates_core_tables(data_dir: Path) -> None:
    path = data_dir / "app.db"
    _at_version(path, 0).close()
    with Store(path) as store:
        store.upsert_session("p", "s1", title="Hello")
        assert store.session("p", "s1") is not None


def test_migration_2_from_v1_with_data_keeps_sessions_drafts_and_adds_outbox(
    data_dir: Path,
) -> None:
    path = data_dir / "app.db"
    conn = _at_version(path, 1)
    conn.execute("INSERT INTO sessions (profile_id, key, title) VALUES ('p', 's1', 'Trip plan')")
    conn.execute("INSERT INTO drafts (session_key, text, cursor) VALUES ('s1', 'half typed', 4)")
    conn.close()
    with Store(path) as store:
        assert store.version == LATEST
        session = store.session("p", "s1")
        assert session is not None and session.title == "Trip plan"
        draft = store.draft("s1")
        assert draft is not None and (draft.text, draft.cursor) == ("half typed", 4)
        entry = store.outbox_add(OutboxEntry("ref1", 0, "p", "s1", "rt", "hi"))
        assert entry.seq == 1 and entry.state is DeliveryState.PENDING


def test_migration_3_from_v2_with_data_indexes_existing_messages_and_titles(
    data_dir: Path,
) -> None:
    path = data_dir / "app.db"
    conn = _at_version(path, 2)
    conn.execute("INSERT INTO sessions (profile_id, key, title) VALUES ('p', 's1', 'Zebra facts')")
    conn.execute(
        "INSERT INTO messages (profile_id, session_key, idx, role, text) "
        "VALUES ('p', 's1', 0, 'user', 'tell me about giraffes')"
    )
    conn.execute(
        "INSERT INTO outbox (submission_ref, seq, profile_id, session_key, text) "
        "VALUES ('r', 1, 'p', 's1', 'queued before upgrade')"
    )
    conn.close()
    with Store(path) as store:
        assert [h.session_key for h in store.search("p", "giraffe")] == ["s1"]
        assert [h.source for h in store.search("p", "zebra")] == ["title"]
        assert [e.text for e in store.outbox_entries()] == ["queued before upgrade"]


def test_migration_6_from_v5_with_data_keeps_sessions_unpinned_and_stores_the_marks(
    data_dir: Path,
) -> None:
    path = data_dir / "app.db"
    conn = _at_version(path, 5)
    conn.execute("INSERT INTO sessions (profile_id, key, title) VALUES ('p', 's1', 'Zebra facts')")
    conn.close()
    with Store(path) as store:
        old = store.session("p", "s1")
        assert old is not None and old.title == "Zebra facts"
        assert (old.summary().pinned, old.summary().archived) == (False, False)
        store.upsert_session("p", "s1", pinned=True, archived=True)
    with Store(path) as store:
        again = store.session("p", "s1")
        assert again is not None and (again.summary().pinned, again.summary().archived) == (
            True,
            True,
        )


def test_migration_7_from_v6_with_data_keeps_sessions_without_a_user_title(
    data_dir: Path,
) -> None:
    path = data_dir / "app.db"
    conn = _at_version(path, 6)
    conn.execute(
        "INSERT INTO sessions (profile_id, key, title, pinned) VALUES ('p', 's1', 'Zebra', 1)"
    )
    conn.close()
    with Store(path) as store:
        old = store.session("p", "s1")
        assert old is not None and (old.title, old.user_title, old.pinned) == ("Zebra", "", 1)
        store.upsert_session("p", "s1", user_title="Mine")
        again = store.session("p", "s1")
        assert again is not None and again.user_title == "Mine"


def test_migration_8_from_v7_with_data_keeps_drafts_without_a_quote_and_stores_one(
    data_dir: Path,
) -> None:
    path = data_dir / "app.db"
    conn = _at_version(path, 7)
    conn.execute("INSERT INTO drafts (session_key, text, revision) VALUES ('p|s1', 'half', 3)")
    conn.close()
    with Store(path) as store:
        old = store.draft("p|s1")
        assert old is not None and (old.text, old.revision, old.quote) == ("half", 3, "")
        store.save_draft(DraftRecord("p|s1", "half", 4, revision=4, quote="> x", quote_from="You"))
    with Store(path) as store:
        again = store.draft("p|s1")
        assert again is not None and (again.quote, again.quote_from) == ("> x", "You")


def test_migration_9_from_v8_with_cjk_messages_finds_a_word_inside_their_sentences(
    data_dir: Path,
) -> None:
    path = data_dir / "app.db"
    conn = _at_version(path, 8)
    conn.executemany(
        "INSERT INTO messages (profile_id, session_key, idx, role, text) VALUES (?, ?, ?, ?, ?)",
        [
            ("p", "s1", 0, "user", "我们需要建立索引来加速"),
            ("p", "s1", 1, "assistant", "plain English, indexed once"),
            ("p", "s2", 0, "user", "データベースの索引を作成します"),
        ],
    )
    conn.close()
    with Store(path) as store:
        assert [(h.session_key, h.message_idx) for h in store.search("p", "索引")] == [
            ("s2", 0),
            ("s1", 0),
        ]
        assert [h.session_key for h in store.search("p", "建立索引")] == ["s1"]
        assert [h.session_key for h in store.search("p", "indexed")] == ["s1"]
    conn = _conn(path)
    # Only the rows holding CJK text are indexed a second time.
    assert conn.execute("SELECT count(*) FROM messages_cjk").fetchone() == (2,)
    conn.close()


def test_database_newer_than_the_app_is_refused_clearly(data_dir: Path) -> None:
    path = data_dir / "app.db"
    conn = _conn(path)
    conn.execute(f"PRAGMA user_version = {LATEST + 1}")
    conn.close()
    with pytest.raises(ValueError, match="newer than this app"):
        Store(path)


def test_sessions_and_message_cache_round_trip(data_dir: Path) -> None:
    with Store(data_dir / "app.db") as store:
        store.upsert_session("p", "s1", title="One", runtime_id="rt1", updated_at=5.0)
        store.upsert_session("p", "s2", title="Two", updated_at=9.0)
        store.upsert_session("p", "s1", message_count=2, last_seq=7, replay_epoch="e1")
        s1 = store.session("p", "s1")
        assert s1 is not None
        assert (s1.title, s1.runtime_id, s1.message_count, s1.last_seq, s1.replay_epoch) == (
            "One",
            "rt1",
            2,
            7,
            "e1",
        )
        assert [s.key for s in store.sessions("p")] == ["s2", "s1"]  # newest first
        msgs = [
            CachedMessage(0, "user", "hi"),
            CachedMessage(1, "assistant", "hello", thinking="hmm", extra={"usage": 3}),
        ]
        store.replace_messages("p", "s1", msgs)
        store.put_message("p", "s1", CachedMessage(1, "assistant", "hello there"))
        got = store.messages("p", "s1")
        assert [(m.role, m.text) for m in got] == [("user", "hi"), ("assistant", "hello there")]
        assert s1.summary().runtime_id == "rt1"


def test_search_finds_messages_and_titles_per_profile_and_follows_edits(data_dir: Path) -> None:
    with Store(data_dir / "app.db") as store:
        store.upsert_session("p", "s1", title="Kitchen renovation")
        store.upsert_session("q", "s9", title="Kitchen secrets")
        store.replace_messages(
            "p",
            "s1",
            [CachedMessage(0, "user", "how wide should the countertop be?")],
        )
        store.replace_messages("p", "s2", [CachedMessage(0, "user", "countertop prices")])
        hits = store.search("p", "counter")
        assert sorted(h.session_key for h in hits) == ["s1", "s2"]
        assert all("\x02counter" in h.snippet.casefold() for h in hits)
        assert [h.session_key for h in store.search("p", "kitchen")] == ["s1"]
        store.put_message("p", "s1", CachedMessage(0, "user", "granite only"))
        assert [h.session_key for h in store.search("p", "countertop")] == ["s2"]
        store.upsert_session("p", "s1", title="Bathroom")
        assert store.search("p", "kitchen") == []
        store.delete_session("p", "s2")
        assert store.search("p", "countertop") == []
        # FTS syntax in user input is harmless.
        assert [h.session_key for h in store.search("p", 'gran"(*')] == ["s1"]
        assert store.search("p", '"') == []


def test_draft_typed_before_its_session_exists_is_adopted(data_dir: Path) -> None:
    with Store(data_dir / "app.db") as store:
        store.save_draft(DraftRecord("new:abc", "first words", 5, revision=3))
        adopted = store.adopt_draft("new:abc", "stored-1")
        assert adopted is not None and adopted.text == "first words"
        assert store.draft("new:abc") is None
        got = store.draft("stored-1")
        assert got is not None and got.text == "first words"


def test_referenced_attachments_come_from_drafts_and_outbox(data_dir: Path) -> None:
    a = Attachment("a" * 64, "a.png", "image/png", 3, "/x/a")
    b = Attachment("b" * 64, "b.txt", "text/plain", 3, "/x/b")
    with Store(data_dir / "app.db") as store:
        store.save_draft(DraftRecord("s1", "see", attachments=(a,)))
        store.outbox_add(OutboxEntry("r", 0, "p", "s1", "rt", "x", attachments=(b,)))
        assert store.referenced_attachments() == {a.sha256, b.sha256}


def _capped(holder: list[sqlite3.Connection]) -> object:
    def connect(path: str) -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None)
        holder.append(conn)
        return conn

    return connect


def test_disk_full_raises_a_clear_error_and_loses_nothing_already_saved(data_dir: Path) -> None:
    conns: list[sqlite3.Connection] = []
    with Store(data_dir / "app.db", connect=_capped(conns)) as store:  # type: ignore[arg-type]
        store.save_draft(DraftRecord("s1", "kept"))
        pages = conns[0].execute("PRAGMA page_count").fetchone()[0]
        conns[0].execute(f"PRAGMA max_page_count = {pages}")  # the disk is now "full"
        big = "x" * 200_000
        with pytest.raises(StorageFullError, match="disk is full") as info:
            store.save_draft(DraftRecord("s2", big))
        assert info.value.is_retryable()
        assert store.draft("s1") is not None and store.draft("s2") is None
        conns[0].execute("PRAGMA max_page_count = 1000000")  # the user made room
        store.save_draft(DraftRecord("s2", big))
        got = store.draft("s2")
        assert got is not None and got.text == big


def test_read_only_data_is_a_clear_error(data_dir: Path) -> None:
    # Tests run as root, which ignores chmod; query_only makes SQLite refuse writes exactly as
    # it does for a read-only file (SQLITE_READONLY).
    conns: list[sqlite3.Connection] = []
    with Store(data_dir / "app.db", connect=_capped(conns)) as store:  # type: ignore[arg-type]
        conns[0].execute("PRAGMA query_only = ON")
        with pytest.raises(StorageReadOnlyError, match="read-only"):
            store.save_draft(DraftRecord("s1", "draft"))
        conns[0].execute("PRAGMA query_only = OFF")
        store.save_draft(DraftRecord("s1", "draft"))
        assert store.draft("s1") is not None


def test_unopenable_database_is_a_storage_error(data_dir: Path) -> None:
    missing_dir = data_dir / "nope" / "app.db"
    with pytest.raises(StorageError, match="cannot open"):
        Store(missing_dir)


def test_read_only_uri_database_is_refused_on_write(data_dir: Path) -> None:
    path = data_dir / "app.db"
    Store(path).close()

    def ro(p: str) -> sqlite3.Connection:
        return sqlite3.connect(f"file:{p}?mode=ro", uri=True, isolation_level=None)

    with Store(path, connect=ro) as store, pytest.raises(StorageReadOnlyError):
        store.save_draft(DraftRecord("s1", "x"))


def test_a_turn_end_stores_only_the_new_messages_and_the_cache_stays_whole(
    data_dir: Path,
) -> None:
    from desktop.common.clock import ManualClock
    from desktop.core.chats.conversation import Conversation
    from desktop.core.chats.index import SessionIndex
    from desktop.core.models import ChatMessage, Role

    store = Store(str(data_dir / "c.sqlite3"))
    store.upsert_session("p", "s1", title="long")
    index = SessionIndex("p", store, ManualClock(), lambda *_: None)
    conv = Conversation("s1")
    conv.messages = [
        ChatMessage(f"s1:{i}", Role.USER if i % 2 == 0 else Role.ASSISTANT, f"m{i}")
        for i in range(300)
    ]
    for m in conv.messages[::2]:
        m.delivery = DeliveryState.CONFIRMED
    index.cache_conversation("s1", conv)
    written = store._conn.total_changes
    prompt = ChatMessage("s1:300", Role.USER, "m300", delivery=DeliveryState.CONFIRMED)
    conv.messages += [prompt, ChatMessage("s1:301", Role.ASSISTANT, "m301")]
    index.cache_conversation("s1", conv)
    assert [m.text for m in store.messages("p", "s1")] == [f"m{i}" for i in range(302)]
    # Rewriting the 302 rows and their search index would be thousands of row changes.
    assert store._conn.total_changes - written < 100, "the whole conversation was rewritten"
    store.close()


def test_a_windowed_session_cached_keeps_its_older_history_and_search(data_dir: Path) -> None:
    """A long session opens with only its last messages loaded: caching it must not drop or
    renumber the older cached rows (the offline view and the local search read them)."""
    from desktop.common.clock import ManualClock
    from desktop.core.chats.conversation import Conversation
    from desktop.core.chats.index import SessionIndex
    from desktop.core.models import ChatMessage, Role

    store = Store(str(data_dir / "w.sqlite3"))
    store.upsert_session("p", "s1", title="long")
    store.replace_messages(
        "p",
        "s1",
        [
            CachedMessage(i, "user" if i % 2 == 0 else "assistant", f"m{i}", "", float(i))
            for i in range(1000)
        ],
    )
    index = SessionIndex("p", store, ManualClock(), lambda *_: None)
    conv = Conversation("s1")
    conv.history_start = 800  # the gateway's window: the last 200 of 1,000, plus a new turn
    conv.messages = [
        ChatMessage(f"s1:{i}", Role.USER if i % 2 == 0 else Role.ASSISTANT, f"m{i}")
        for i in range(800, 1002)
    ]
    for m in conv.messages[::2]:
        m.delivery = DeliveryState.CONFIRMED
    index.cache_conversation("s1", conv)
    cached = store.messages("p", "s1")
    assert [m.idx for m in cached] == list(range(1002))
    assert [m.text for m in cached] == [f"m{i}" for i in range(1002)]
    # The local search still finds an old message, at its place in the whole history.
    assert 20 in {hit.message_idx for hit in store.search("p", "m20", limit=500)}
    store.close()


def test_a_session_read_far_up_caches_its_live_end_at_its_place(data_dir: Path) -> None:
    """Far up, a long session holds a window and its live end (newer rows let go between):
    a turn ending then is cached at its place, the rows cached before kept as they are."""
    from desktop.common.clock import ManualClock
    from desktop.core.chats.conversation import Conversation
    from desktop.core.chats.index import SessionIndex
    from desktop.core.chats.router import HISTORY_HELD, HISTORY_PAGE, HISTORY_WINDOW
    from desktop.core.models import ChatMessage, Role

    n = 3000
    roles = ["user" if i % 2 == 0 else "assistant" for i in range(n)]
    store = Store(str(data_dir / "f.sqlite3"))
    store.upsert_session("p", "s1", title="long")
    store.replace_messages(
        "p", "s1", [CachedMessage(i, roles[i], f"m{i}", "", float(i)) for i in range(n)]
    )
    index = SessionIndex("p", store, ManualClock(), lambda *_: None)
    rows = [{"role": roles[i], "content": f"m{i}"} for i in range(n)]
    conv = Conversation("s1")
    conv.load_snapshot(
        {"messages": rows[n - HISTORY_WINDOW :], "history_start": n - HISTORY_WINDOW}
    )
    while conv.history_start > 600:  # scrolled up page by page
        first = conv.history_start - HISTORY_PAGE
        conv.prepend_history(rows[first : conv.history_start], first)
        conv.drop_newest(HISTORY_HELD, HISTORY_WINDOW)
    assert len(conv.shown) <= HISTORY_HELD and conv.gap is not None, "newer rows let go"
    conv.messages += [
        ChatMessage(f"s1:{n}", Role.USER, f"m{n}", delivery=DeliveryState.CONFIRMED),
        ChatMessage(f"s1:{n + 1}", Role.ASSISTANT, f"m{n + 1}"),
    ]
    index.cache_conversation("s1", conv)
    cached = store.messages("p", "s1")
    assert [(m.idx, m.text) for m in cached] == [(i, f"m{i}") for i in range(n + 2)]
    store.close()


def test_a_history_with_tool_rows_is_cached_under_the_ids_it_is_shown_with(
    data_dir: Path,
) -> None:
    """A reply of assistant and tool rows is one bubble, its id its first row's place: cached
    at that place, a search hit names the bubble shown (no paging, as on Hermes, and paged)."""
    from desktop.common.clock import ManualClock
    from desktop.core.chats.conversation import Conversation
    from desktop.core.chats.index import SessionIndex

    turn = ("user", "assistant", "tool", "tool", "assistant")
    rows = [
        {"role": role, "content": f"{role} {t}.{i}", "name": "search"}
        for t in range(30)
        for i, role in enumerate(turn)
    ]
    store = Store(str(data_dir / "t.sqlite3"))
    store.upsert_session("p", "s1", title="tools")
    index = SessionIndex("p", store, ManualClock(), lambda *_: None)
    for start in (0, 45):  # the whole history; only its end (a paged gateway)
        conv = Conversation("s1")
        conv.load_snapshot({"messages": rows[start:], "history_start": start})
        index.cache_conversation("s1", conv)
        shown = {m.id: m.text for m in conv.messages}
        cached = {m.id: m.text for m in index.cached_messages("s1")}
        assert {k: cached[k] for k in shown} == shown
        hit = next(h for h in store.search("p", "assistant 20.4", limit=5))
        assert shown[f"s1:{hit.message_idx}"] == "assistant 20.4"
    store.close()


def test_prompts_over_every_chat_newest_chat_first_and_only_the_users(data_dir: Path) -> None:
    with Store(data_dir / "app.db") as store:
        store.upsert_session("p", "old", updated_at=1.0)
        store.upsert_session("p", "new", updated_at=2.0)
        store.upsert_session("q", "other", updated_at=3.0)
        store.put_message("p", "old", CachedMessage(0, "user", "first question"))
        store.put_message("p", "old", CachedMessage(1, "assistant", "an answer"))
        store.put_message("p", "new", CachedMessage(0, "user", "newer question"))
        store.put_message("p", "new", CachedMessage(1, "user", "newest question"))
        store.put_message("q", "other", CachedMessage(0, "user", "another profile"))
        assert store.prompts("p") == [
            ("new", "newest question"),
            ("new", "newer question"),
            ("old", "first question"),
        ]


def test_search_with_more_matches_than_its_limit_finds_the_newest(data_dir: Path) -> None:
    """A word in more messages than a search returns: the newest messages' chats are found
    (they head the list), not whichever matches ranked first over the whole store."""
    with Store(data_dir / "app.db") as store:
        for k in range(6):
            store.upsert_session("p", f"s{k}", title=f"chat {k}")
            store.replace_messages(
                "p", f"s{k}", [CachedMessage(i, "user", f"the giraffe again {i}") for i in range(5)]
            )
        hits = store.search("p", "giraffe", limit=5)
        newest = [("s5", i) for i in (4, 3, 2, 1, 0)]
        assert [(h.session_key, h.message_idx) for h in hits] == newest


def test_search_finds_a_cjk_word_of_any_length_inside_a_sentence_newest_first(
    data_dir: Path,
) -> None:
    with Store(data_dir / "app.db") as store:
        store.upsert_session("p", "s1", title="数据库笔记")
        store.replace_messages("p", "s1", [CachedMessage(0, "user", "我们需要建立索引来加速")])
        store.replace_messages(
            "p",
            "s2",
            [
                CachedMessage(0, "user", "データベースの索引を作成します"),
                CachedMessage(1, "assistant", "한국어 데이터베이스 색인을 만듭니다"),
            ],
        )
        store.replace_messages("q", "s9", [CachedMessage(0, "user", "别的用户的索引")])
        for word, found in [
            ("索", [("s2", 0), ("s1", 0)]),  # one character
            ("索引", [("s2", 0), ("s1", 0)]),  # two, inside the sentence (not its start)
            ("建立索引", [("s1", 0)]),  # three and more, by trigrams
            ("ベースの索", [("s2", 0)]),
            ("색인", [("s2", 1)]),
            ("索引 加速", [("s1", 0)]),  # every word must match
        ]:
            hits = [h for h in store.search("p", word) if h.source == "message"]
            assert [(h.session_key, h.message_idx) for h in hits] == found, word
            for w in word.split():
                assert all(f"\x02{w}\x03" in h.snippet for h in hits), (word, hits)
        assert [h.snippet for h in store.search("p", "建立索引")] == [
            "我们需要\x02建立索引\x03来加速"
        ]
        # Titles too, and the index follows edits and deletes.
        assert [(h.session_key, h.source) for h in store.search("p", "据库")] == [("s1", "title")]
        store.put_message("p", "s1", CachedMessage(0, "user", "换成了别的内容"))
        assert [h.session_key for h in store.search("p", "建立索引")] == []
        assert [h.session_key for h in store.search("p", "别的")] == ["s1"]
        store.delete_session("p", "s2")
        assert [h.session_key for h in store.search("p", "索引")] == []
