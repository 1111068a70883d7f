"""A chat opened from the local cache: its newest page first, older pages as they are wanted,
and a gateway's history laid over all the cached bubbles it reaches back to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop.common.clock import ManualClock
from desktop.core.chats import reply_state as rs
from desktop.core.chats.conversation import Conversation
from desktop.core.chats.index import SessionIndex
from desktop.core.disk.store import CachedMessage, Store
from desktop.core.models import ChatMessage, Role

KEY = "k"


class Pages:
    """The index's cached pages of chat KEY, counting the rows each read returned."""

    def __init__(self, index: SessionIndex) -> None:
        self.index = index
        self.reads: list[int] = []

    def __call__(
        self,
        *,
        first: int = 0,
        end: int | None = None,
        limit: int | None = None,
        newest: bool = False,
    ) -> list[ChatMessage]:
        out = self.index.cached_messages(KEY, first=first, end=end, limit=limit, newest=newest)
        self.reads.append(len(out))
        return out


def index_over(tmp_path: Path) -> tuple[SessionIndex, Store]:
    store = Store(str(tmp_path / "cache.sqlite3"))
    store.upsert_session("p", KEY, title="Chat")
    return SessionIndex("p", store, ManualClock(), lambda call: None), store


def texts(messages: list[ChatMessage]) -> list[str]:
    return [m.text for m in messages]


def test_a_chat_opens_with_its_newest_cached_page_and_pages_back_to_its_first_message(
    tmp_path: Path,
) -> None:
    index, store = index_over(tmp_path)
    n = 1001  # its newest 200 start with a reply: that one comes with its prompt, older
    roles = ("user", "assistant")
    store.replace_messages("p", KEY, [CachedMessage(i, roles[i % 2], f"m{i}") for i in range(n)])
    pages = Pages(index)
    conv = Conversation(KEY)
    conv.seed_cached(pages, 200)
    assert pages.reads == [200], "one page read for the first screen, not the whole chat"
    assert texts(conv.messages) == [f"m{i}" for i in range(802, n)]
    assert conv.reads_cache and conv.history_start == 802
    while conv.prepend_cached(200):
        assert conv.messages[0].role is Role.USER, "a page starts with a prompt"
    assert texts(conv.messages) == [f"m{i}" for i in range(n)], "every message once, in order"
    assert conv.history_start == 0 and max(pages.reads) <= 200
    reads = len(pages.reads)
    assert conv.prepend_cached(200) == 0 and len(pages.reads) == reads, "nothing read past it"


def hermes_rows(turns: int, *, unanswered: int | None = None) -> list[dict[str, Any]]:
    """A Hermes history: each turn a prompt and a reply of 3 rows (a tool call, its result,
    the answer), 4 rows a turn; turn `unanswered` only its prompt (its reply failed)."""
    out: list[dict[str, Any]] = []
    for t in range(turns):
        out.append({"role": "user", "content": f"q{t}", "timestamp": 1000.0 + t})
        if t == unanswered:
            continue
        out += [
            {"role": "assistant", "content": ""},
            {"role": "tool", "name": "terminal", "content": "{}"},
            {"role": "assistant", "content": f"a{t}"},
        ]
    return out


def shown_live(rows: list[dict[str, Any]], failed_after: int | None = None) -> Conversation:
    """The chat as it was shown live and cached: its replies with their tool output and turn
    times (no history row keeps them), and, after prompt `failed_after`, a reply that failed
    (Hermes keeps no failed reply)."""
    conv = Conversation(KEY)
    conv.load_snapshot({"messages": rows, "running": False})
    for m in conv.messages:
        if m.role is Role.ASSISTANT:
            m.duration = float(len(m.text))
            for call in m.tools:
                call.output = f"output of {m.text}"
    if failed_after is not None:
        at = next(i for i, m in enumerate(conv.messages) if m.text == f"q{failed_after}")
        conv.messages.insert(
            at + 1,
            ChatMessage(
                f"{KEY}:reply:1", Role.ASSISTANT, "half an answer", status=rs.FAILED, cause="boom"
            ),
        )
    return conv


def extras(messages: list[ChatMessage]) -> list[tuple[str, Any, list[str], str]]:
    """What a reply shows beyond a history row: its turn time, tool output, how it ended."""
    return [
        (m.text, m.duration, [t.output for t in m.tools], m.cause)
        for m in messages
        if m.role is Role.ASSISTANT
    ]


def test_a_whole_history_after_a_restart_keeps_the_tool_output_and_times_of_older_turns(
    tmp_path: Path,
) -> None:
    """Hermes sends the whole history: every earlier reply keeps its tool output, turn time
    and failure from the cache, and no cached row is lost, though the chat opened with its
    newest page only."""
    rows = hermes_rows(40, unanswered=5)
    before = shown_live(rows, failed_after=5)
    index, store = index_over(tmp_path)
    index.cache_conversation(KEY, before)
    cached = store.messages("p", KEY)
    assert len(cached) == len(before.messages)

    again, _ = index_over(tmp_path)  # the next start
    pages = Pages(again)
    conv = Conversation(KEY)
    conv.seed_cached(pages, 10)
    assert len(conv.messages) == 10 and pages.reads == [10]
    conv.load_snapshot({"messages": rows, "running": False})
    assert not conv.reads_cache and conv.history_start == 0
    assert extras(conv.messages) == extras(before.messages)
    assert texts(conv.messages) == texts(before.messages), "the failed reply after its prompt"
    again.cache_conversation(KEY, conv)
    assert store.messages("p", KEY) == cached, "the cache as it was: nothing lost or changed"


@pytest.mark.parametrize("page", [None, 200], ids=["whole cache", "newest page"])
def test_a_paged_history_after_a_restart_keeps_what_its_cached_replies_had(
    tmp_path: Path, page: int | None
) -> None:
    """A gateway that pages (the embedded one) sends the last rows: matched to the cached
    bubbles by their rows (a reply of several rows is one bubble), its replies keep their
    turn times and tool output, whether the chat opened with its whole cache or a page."""
    rows = hermes_rows(150)  # 600 rows, 300 bubbles
    before = shown_live(rows)
    index, store = index_over(tmp_path)
    index.cache_conversation(KEY, before)
    again, _ = index_over(tmp_path)
    conv = Conversation(KEY)
    if page is None:
        conv.seed(again.cached_messages(KEY))
    else:
        conv.seed_cached(Pages(again), page)
    start = len(rows) - 200
    conv.load_snapshot({"messages": rows[start:], "history_start": start, "running": False})
    assert conv.history_start == start and len(conv.messages) == 100
    assert extras(conv.messages) == extras(before.messages)[-50:]
    again.cache_conversation(KEY, conv)
    assert len(store.messages("p", KEY)) == len(before.messages), "older cached rows stay"


def test_a_history_refused_after_opening_from_the_cache_deletes_no_older_cached_row(
    tmp_path: Path,
) -> None:
    index, store = index_over(tmp_path)
    rows = [CachedMessage(i, ("user", "assistant")[i % 2], f"m{i}") for i in range(1000)]
    store.replace_messages("p", KEY, rows)
    conv = Conversation(KEY)
    conv.seed_cached(Pages(index), 200)
    # Online, but the history could not be fetched: what is shown stays, and is cached.
    conv.load_snapshot({"messages": [], "messages_omitted": True}, keep_messages=True)
    index.cache_conversation(KEY, conv)
    assert store.messages("p", KEY) == rows
