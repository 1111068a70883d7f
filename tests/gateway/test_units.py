"""Unit tests of the gateway's pure parts: replay log, token file, coalescing, store repair."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

from desktop.common.hosts import is_loopback_host
from desktop.gateway.rpc.auth import load_or_create_token, request_token
from desktop.gateway.sessions.events import EventLog
from desktop.gateway.sessions.store import Store


def test_event_log_numbers_events_and_reports_gaps() -> None:
    log = EventLog(limit=2)
    for i in range(4):
        log.append("s", "message.delta", {"text": str(i)})
    events, complete = log.since(1)
    assert [e["seq"] for e in events] == [3, 4] and complete is False
    events, complete = log.since(2)
    assert [e["payload"]["text"] for e in events] == ["2", "3"] and complete is True
    assert log.since(4) == ([], True)


def test_token_file_is_created_private_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "token"
    token, created = load_or_create_token(path)
    assert created and len(token) >= 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_token(path) == (token, False)


def test_request_token_sources_and_loopback_policy() -> None:
    assert request_token("/api/ws?token=abc", None) == "abc"
    assert request_token("/api/ws", "Bearer xyz") == "xyz"
    assert request_token("/api/ws", None) is None
    assert (
        is_loopback_host("127.0.0.1") and is_loopback_host("::1") and is_loopback_host("localhost")
    )
    assert not is_loopback_host("0.0.0.0") and not is_loopback_host("example.org")


def test_dead_worker_is_repaired_and_queued_prompts_kept(tmp_path: Path) -> None:
    store = Store(tmp_path / "g.sqlite3")
    try:
        store.create_session("s1", "", "desktop", 1.0)
        store.record_submit(
            "s1", ref="a", digest="d", result={"status": "streaming"}, text="a", now=1
        )
        store.start_turn("s1", ref="a", text="a", attachments=None, epoch="old", now=2.0)
        reply = store.begin_reply("s1", 3.0)
        store.save_partial(reply, "half")
        store.record_submit("s1", ref="b", digest="e", result={"status": "queued"}, text="b", now=4)
        assert store.repair("s1", "old", worker_alive=True) is False
        assert store.repair("s1", "new", worker_alive=False) is True
        rows = store.messages("s1")
        assert [(r.role, r.text, r.status) for r in rows] == [
            ("user", "a", "complete"),
            ("assistant", "half", "interrupted"),
            ("user", "b", "complete"),
        ]
        row = store.get_session("s1")
        assert row is not None and row.running_epoch is None
        assert store.served_submits() == 2
    finally:
        store.close()


async def test_deltas_are_coalesced_in_order() -> None:
    from desktop.gateway.sessions.events import EventLog as Log
    from desktop.gateway.sessions.state import Session
    from desktop.gateway.sessions.turns import DeltaCoalescer

    session = Session("r", "s", "", "", 0.0, Log())
    sent: list[str] = []
    flushed = asyncio.Event()

    def emit(_s: Session, type_: str, payload: dict[str, object]) -> None:
        sent.append(str(payload["text"]))
        if len(sent) == 2:
            flushed.set()

    coalescer = DeltaCoalescer(session, emit, 0.05)
    coalescer.add("a")  # first delta goes out at once
    coalescer.add("b")
    coalescer.add("c")
    assert sent == ["a"]
    await flushed.wait()  # the timer flushes the rest as one frame
    assert sent == ["a", "bc"]
    coalescer.flush()
    assert sent == ["a", "bc"]


def test_imported_messages_are_the_sessions_history_in_order(tmp_path: Path) -> None:
    store = Store(tmp_path / "g.sqlite3")
    store.create_session("s1", "t", "desktop", 1.0)
    added = store.import_messages("s1", [("user", "q", 2.0), ("assistant", "**a**", 3.0)])
    assert added == 2
    rows = store.messages("s1")
    assert [(r.role, r.text, r.status) for r in rows] == [
        ("user", "q", "complete"),
        ("assistant", "**a**", "complete"),
    ]
    session = store.get_session("s1")
    assert session is not None and session.updated_at == 3.0 and session.message_count == 2
    store.close()
