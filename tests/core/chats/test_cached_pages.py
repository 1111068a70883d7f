"""A chat shown from the local cache, then a gateway's history laid over it: what only the
cache had carries over."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop.common.clock import ManualClock
from desktop.core.chats import reply_state as rs
from desktop.core.chats.conversation import Conversation
from desktop.core.chats.index import SessionIndex
from desktop.core.disk.store import Store
from desktop.core.models import ChatMessage, Role

KEY = "k"


def index_over(tmp_path: Path) -> tuple[SessionIndex, Store]:
    store = Store(str(tmp_path / "cache.sqlite3"))
    store.upsert_session("p", KEY, title="Chat")
    return SessionIndex("p", store, ManualClock(), lambda call: None), store


def texts(messages: list[ChatMessage]) -> list[str]:
    return [m.text for m in messages]


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


def test_a_paged_history_after_a_restart_keeps_what_its_cached_replies_had(
    tmp_path: Path,
) -> None:
    """A gateway that pages (the embedded one) sends the last rows: matched to the cached
    bubbles by their rows (a reply of several rows is one bubble), its replies keep their
    turn times and tool output."""
    rows = hermes_rows(150)  # 600 rows, 300 bubbles
    before = shown_live(rows)
    index, store = index_over(tmp_path)
    index.cache_conversation(KEY, before)
    again, _ = index_over(tmp_path)
    conv = Conversation(KEY)
    conv.seed(again.cached_messages(KEY))
    start = len(rows) - 200
    conv.load_snapshot({"messages": rows[start:], "history_start": start, "running": False})
    assert conv.history_start == start and len(conv.messages) == 100
    assert extras(conv.messages) == extras(before.messages)[-50:]
    again.cache_conversation(KEY, conv)
    assert len(store.messages("p", KEY)) == len(before.messages), "older cached rows stay"
