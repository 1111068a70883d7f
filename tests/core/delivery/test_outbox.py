"""The outbox: persisted before sending, exactly-once delivery, reconcile, queue, restart."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop.common.clock import ManualClock
from desktop.common.codes import RESUME_TARGET_NOT_FOUND, SESSION_NOT_FOUND
from desktop.core.delivery.outbox import NOT_CONFIRMED, SESSION_GONE, Outbox, OutboxError
from desktop.core.disk.drafts import DraftKeeper
from desktop.core.disk.store import OutboxEntry, Store, Wire
from desktop.core.errors import (
    CallTimeoutError,
    ConnectionLostError,
    NotConnectedError,
    RpcError,
    StorageError,
)
from desktop.core.link.dialect import Dialect
from desktop.core.models import Attachment, DeliveryState

# Scripted per-call actions (popped in order for a method):
LOSE = "lose"  # the request never reaches the agent, the socket dies
DROP_REPLY = "drop_reply"  # the agent runs it, then the socket dies before the reply
TIMEOUT = "timeout"  # the agent runs it, the reply never comes (socket still up)


class FakeGateway:
    def __init__(
        self,
        *,
        dedup: bool,
        online: bool = True,
        file_attachments: bool = False,
        pages: bool = False,
    ):
        self.dialect = Dialect(
            submission_ref=dedup, file_attachments=file_attachments, history_window=pages
        )
        # User rows the client knows the session's history holds (a real line's marks).
        self.user_count: int | None = None
        self.dedup = dedup
        self.online = online
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.executed: list[dict[str, Any]] = []  # turns the agent actually ran
        self.staged: dict[str, list[str]] = {}
        self.script: dict[str, list[Any]] = {}
        self.hook: Callable[[str, dict[str, Any]], None] | None = None
        # What the session router does with a runtime id it adopts (records it in the store).
        self.on_ids: Callable[[str, str], None] | None = None
        self.hold: asyncio.Event | None = None  # prompt.submit waits on it when set
        self.entered = asyncio.Event()
        self.snapshot: dict[str, Any] = {}
        self.history: dict[str, Any] = {"count": 0, "messages": []}
        self.served_refs: dict[str, Any] = {}

    def is_online(self) -> bool:
        return self.online

    # No chat is followed here: no turn holds a prompt, no user rows are known.
    def turn_state(self, session_key: str) -> tuple[bool, int] | None:
        return None

    def user_rows(self, session_key: str) -> int | None:
        return self.user_count

    def watch(self, session_key: str, callback: Callable[[], None]) -> Callable[[], None] | None:
        return None

    def submits(self) -> list[dict[str, Any]]:
        return [p for m, p in self.calls if m == "prompt.submit"]

    def methods(self) -> list[str]:
        return [m for m, _ in self.calls]

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 30.0
    ) -> Any:
        if not self.online:
            raise NotConnectedError("not connected")
        params = dict(params or {})
        self.calls.append((method, params))
        if self.hook is not None:
            self.hook(method, params)
        if method == "prompt.submit" and self.hold is not None:
            self.entered.set()
            await self.hold.wait()
        queue = self.script.get(method) or []
        action = queue.pop(0) if queue else None
        if isinstance(action, BaseException):
            raise action
        if action == LOSE:
            self.online = False
            raise ConnectionLostError("socket closed")
        result = self._run(method, params)
        if action == DROP_REPLY:
            self.online = False
            raise ConnectionLostError("socket closed after the request was written")
        if action == TIMEOUT:
            raise CallTimeoutError("no reply in time")
        return result

    # The session router's part of the port, reduced to what these tests script.
    async def reattach(self, session_key: str, runtime_hint: str) -> dict[str, Any] | None:
        try:
            return await self.call("session.activate", {"session_id": runtime_hint})
        except RpcError as exc:
            if exc.code != SESSION_NOT_FOUND:
                raise
        return await self._resumed(session_key)

    async def resume(self, session_key: str) -> str | None:
        snap = await self._resumed(session_key)
        if snap is None:
            return None
        if self.on_ids is not None:
            self.on_ids(session_key, str(snap["session_id"]))
        return str(snap["session_id"])

    async def _resumed(self, session_key: str) -> dict[str, Any] | None:
        try:
            return await self.call("session.resume", {"session_id": session_key})
        except RpcError as exc:
            if exc.code != RESUME_TARGET_NOT_FOUND:
                raise
        return None

    def _run(self, method: str, params: dict[str, Any]) -> Any:
        sid = str(params.get("session_id", ""))
        if method == "prompt.submit":
            ref = params.get("submission_ref")
            if self.dedup and ref in self.served_refs:
                return self.served_refs[ref]
            self.executed.append(
                {"session": sid, "text": params["text"], "files": self.staged.pop(sid, [])}
            )
            result = {"status": "streaming"}
            if ref:
                self.served_refs[ref] = result
            return result
        if method in ("image.attach_bytes", "file.attach_bytes"):
            self.staged.setdefault(sid, []).append(params["filename"])
            return {"attached": True, "count": len(self.staged[sid])}
        if method == "attachments.clear":
            self.staged.pop(sid, None)
            return {"cleared": True}
        if method == "session.activate":
            return self.snapshot
        if method == "session.history":
            return self.history
        if method == "session.resume":
            return {"session_id": "rt-resumed"}
        raise RpcError(-32601, "method not found", method=method)


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


@pytest.fixture
def store(data_dir: Path) -> Iterator[Store]:
    s = Store(data_dir / "app.db")
    yield s
    s.close()


@pytest.fixture
def image(data_dir: Path) -> Attachment:
    from desktop.core.disk.attachments import AttachmentStore

    return AttachmentStore(data_dir).add(PNG, "cat.png")


class Recorder:
    def __init__(self, outbox: Outbox, store: Store) -> None:
        self.states: list[tuple[str, DeliveryState, str]] = []
        self.restored: list[tuple[str, tuple[Attachment, ...], bool]] = []
        self._store = store
        outbox.on_state(lambda e: self.states.append((e.text, e.state, e.error)))
        outbox.on_restore(self._restore)

    def _restore(self, entry: OutboxEntry) -> bool:
        still_queued = self._store.outbox_get(entry.submission_ref) is not None
        self.restored.append((entry.text, entry.attachments, still_queued))
        return True

    def of(self, text: str) -> list[DeliveryState]:
        return [s for t, s, _ in self.states if t == text]


def _make(store: Store, gw: FakeGateway, clock: ManualClock | None = None) -> Outbox:
    return Outbox(store, lambda _profile: gw, clock or ManualClock())


async def test_entry_and_ref_are_persisted_before_the_first_byte_is_sent(store: Store) -> None:
    gw = FakeGateway(dedup=True)
    seen: list[tuple[str, int, str]] = []

    def check_db(method: str, params: dict[str, Any]) -> None:
        # A separate connection sees only committed rows: proof it was synced first.
        with sqlite3.connect(store.path) as other:
            row = other.execute(
                "SELECT state, wire FROM outbox WHERE submission_ref = ?",
                (params["submission_ref"],),
            ).fetchone()
        other.close()
        seen.append((row[0], row[1], method))

    gw.hook = check_db
    outbox = _make(store, gw)
    entry = outbox.submit("p", "s1", "rt1", "hello")
    assert 1 <= len(entry.submission_ref) <= 64 and entry.submission_ref.isprintable()
    await outbox.idle()
    assert seen == [("pending", Wire.SUBMITTED, "prompt.submit")]
    assert gw.submits() == [
        {
            "session_id": "rt1",
            "text": "hello",
            "queued": True,
            "submission_ref": entry.submission_ref,
        }
    ]


async def test_confirmed_path_notifies_and_leaves_the_outbox_empty(
    store: Store, image: Attachment
) -> None:
    gw = FakeGateway(dedup=False)
    outbox = _make(store, gw)
    rec = Recorder(outbox, store)
    outbox.submit("p", "s1", "rt1", "look", [image])
    await outbox.idle()
    assert rec.of("look") == [DeliveryState.PENDING, DeliveryState.CONFIRMED]
    assert gw.executed == [{"session": "rt1", "text": "look", "files": ["cat.png"]}]
    assert gw.methods() == ["image.attach_bytes", "prompt.submit"]
    assert "submission_ref" not in gw.submits()[0]  # legacy gateway: field omitted
    assert outbox.entries() == []


async def test_ambiguous_on_dedup_gateway_is_resent_with_same_ref_and_runs_once(
    store: Store, image: Attachment
) -> None:
    gw = FakeGateway(dedup=True)
    gw.script["prompt.submit"] = [DROP_REPLY]
    outbox = _make(store, gw)
    rec = Recorder(outbox, store)
    entry = outbox.submit("p", "s1", "rt1", "book the flight", [image])
    await outbox.idle()
    assert rec.of("book the flight")[-1] is DeliveryState.UNCONFIRMED
    assert len(gw.executed) == 1
    gw.online = True
    await outbox.flush("p")
    refs = [p["submission_ref"] for p in gw.submits()]
    assert refs == [entry.submission_ref, entry.submission_ref]
    assert len(gw.executed) == 1  # the agent ran it exactly once
    assert gw.executed[0]["files"] == ["cat.png"]
    # Staged attachments cleared before re-staging, so nothing is staged twice.
    assert gw.methods() == [
        "image.attach_bytes",
        "prompt.submit",
        "attachments.clear",
        "image.attach_bytes",
        "prompt.submit",
    ]
    assert rec.of("book the flight")[-1] is DeliveryState.CONFIRMED
    assert outbox.entries() == []


async def test_reply_timeout_on_dedup_gateway_retries_on_the_backoff_timer(store: Store) -> None:
    gw = FakeGateway(dedup=True)
    gw.script["prompt.submit"] = [TIMEOUT]
    clock = ManualClock()
    outbox = _make(store, gw, clock)
    outbox.submit("p", "s1", "rt1", "hi")
    await outbox.idle()
    assert len(gw.submits()) == 1 and clock.pending == 1
    clock.advance(1.0)
    await outbox.idle()
    assert len(gw.submits()) == 2 and len(gw.executed) == 1
    assert outbox.entries() == []


async def test_ambiguous_on_legacy_gateway_is_never_resent_and_inflight_confirms(
    store: Store,
) -> None:
    gw = FakeGateway(dedup=False)
    gw.script["prompt.submit"] = [DROP_REPLY]
    outbox = _make(store, gw)
    rec = Recorder(outbox, store)
    outbox.submit("p", "s1", "rt1", "run the report")
    await outbox.idle()
    gw.online = True
    await outbox.flush()
    await outbox.flush()
    assert len(gw.submits()) == 1  # never replayed
    assert outbox.unconfirmed_sessions("p") == {"s1"}
    result = outbox.reconcile(
        "s1", {"running": True, "inflight": {"user": "run the report", "assistant": "Wor"}}
    )
    assert [e.text for e in result.confirmed] == ["run the report"]
    assert rec.of("run the report")[-1] is DeliveryState.CONFIRMED
    assert rec.restored == [] and outbox.entries() == []


async def test_legacy_reconcile_not_found_fails_restores_then_deletes(
    store: Store, image: Attachment
) -> None:
    gw = FakeGateway(dedup=False)
    gw.script["prompt.submit"] = [LOSE]  # it never reached the agent
    outbox = _make(store, gw)
    rec = Recorder(outbox, store)
    keeper = DraftKeeper(store, ManualClock())
    outbox.on_restore(lambda e: keeper.restore(e.session_key, e.text, e.attachments).saved)
    # The same words were sent earlier (history row 0): that must not confirm this one.
    gw.user_count = 1
    outbox.submit("p", "s1", "rt1", "yes", [image], history_len=2)
    await outbox.idle()
    history = {
        "count": 2,
        "messages": [{"role": "user", "text": "yes"}, {"role": "assistant", "text": "ok"}],
    }
    result = outbox.reconcile("s1", {"running": False}, history)
    assert [e.error for e in result.failed] == [NOT_CONFIRMED]
    assert rec.of("yes")[-1] is DeliveryState.FAILED
    assert rec.restored == [("yes", (image,), True)]  # restored while still queued
    assert outbox.entries() == []  # ...and only then removed
    assert keeper.load("s1").text == "yes" and keeper.load("s1").attachments == (image,)


async def test_history_row_after_the_mark_confirms(store: Store) -> None:
    gw = FakeGateway(dedup=False)
    gw.script["prompt.submit"] = [DROP_REPLY]
    gw.user_count = 1  # one user row ("yes") before it
    outbox = _make(store, gw)
    outbox.submit("p", "s1", "rt1", "yes", history_len=2)
    await outbox.idle()
    history = {
        "messages": [
            {"role": "user", "text": "yes"},
            {"role": "assistant", "text": "ok"},
            {"role": "user", "text": "yes "},
            {"role": "assistant", "text": "done"},
        ]
    }
    result = outbox.reconcile("s1", {}, history)
    assert len(result.confirmed) == 1 and outbox.entries() == []


async def test_a_paged_history_tail_is_read_at_its_offset(store: Store) -> None:
    """A gateway sends only the tail of a long history (`offset` says where it starts)."""
    gw = FakeGateway(dedup=False, pages=True)
    gw.script["prompt.submit"] = [DROP_REPLY, DROP_REPLY]
    outbox = _make(store, gw)
    outbox.submit("p", "s1", "rt1", "yes", history_len=1000)
    await outbox.idle()
    gw.online = True  # the second one is cut the same way on the next socket
    outbox.submit("p", "s2", "rt2", "old", history_len=10)
    await outbox.idle()
    tail = {"count": 1002, "offset": 1000, "messages": [{"role": "user", "text": "yes"}]}
    # Row 1000 is after the mark: "yes" ran.
    assert [e.text for e in outbox.reconcile("s1", {}, tail).confirmed] == ["yes"]
    # "old" may be in the rows before the tail: not provably lost, so not failed.
    result = outbox.reconcile("s2", {}, {**tail, "messages": []})
    assert result.failed == [] and [e.text for e in result.unresolved] == ["old"]


async def test_reconcile_without_history_stays_unconfirmed_and_via_fetches_it(
    store: Store,
) -> None:
    gw = FakeGateway(dedup=False)
    gw.script["prompt.submit"] = [DROP_REPLY]
    outbox = _make(store, gw)
    outbox.submit("p", "s1", "rt1", "summarise", history_len=0)
    await outbox.idle()
    assert outbox.reconcile("s1", {"running": False}).unresolved != []
    gw.online = True
    gw.snapshot = {"session_id": "rt1", "running": False}
    gw.history = {"count": 2, "messages": [{"role": "user", "text": "summarise"}]}
    result = await outbox.reconcile_via("p", "s1")
    assert [e.text for e in result.confirmed] == ["summarise"]
    assert gw.methods()[-2:] == ["session.activate", "session.history"]


async def test_offline_queue_goes_out_in_order_exactly_once(store: Store) -> None:
    gw = FakeGateway(dedup=False, online=False)
    outbox = _make(store, gw)
    for text in ("one", "two", "three"):
        outbox.submit("p", "s1", "rt1", text)
    await outbox.idle()
    assert gw.calls == []
    gw.online = True
    outbox.on_online("p")
    outbox.on_online("p")  # a duplicate "online" must not double anything
    await outbox.flush("p")
    assert [e["text"] for e in gw.executed] == ["one", "two", "three"]
    assert outbox.entries() == []


async def test_a_stuck_or_failed_session_never_blocks_others(store: Store) -> None:
    gw = FakeGateway(dedup=False, online=False)
    outbox = _make(store, gw)
    rec = Recorder(outbox, store)
    outbox.submit("p", "s1", "rt1", "bad params")
    outbox.submit("p", "s1", "rt1", "after bad")
    outbox.submit("p", "s2", "rt2", "ambiguous")
    outbox.submit("p", "s2", "rt2", "waits for reconcile")
    outbox.submit("p", "s3", "rt3", "independent")
    gw.script["prompt.submit"] = [RpcError(-32602, "invalid params"), None, TIMEOUT]
    gw.online = True
    await outbox.flush("p")
    assert rec.of("bad params")[-1] is DeliveryState.FAILED
    assert rec.restored[0][0] == "bad params"
    ran = [e["text"] for e in gw.executed]
    assert "after bad" in ran and "independent" in ran
    assert "waits for reconcile" not in [p["text"] for p in gw.submits()]
    assert rec.of("ambiguous")[-1] is DeliveryState.UNCONFIRMED
    outbox.reconcile("s2", {"inflight": {"user": "ambiguous"}})
    await outbox.idle()
    assert [e["text"] for e in gw.executed][-1] == "waits for reconcile"
    assert outbox.entries() == []


async def test_queued_entry_can_be_edited_or_cancelled_but_not_once_sending(
    store: Store,
) -> None:
    gw = FakeGateway(dedup=False, online=False)
    outbox = _make(store, gw)
    a = outbox.submit("p", "s1", "rt1", "typo")
    b = outbox.submit("p", "s1", "rt1", "never mind")
    assert outbox.edit(a.submission_ref, "fixed").text == "fixed"
    assert outbox.cancel(b.submission_ref).text == "never mind"
    with pytest.raises(OutboxError, match="no longer queued"):
        outbox.edit(b.submission_ref, "x")
    gw.online = True
    gw.hold = asyncio.Event()
    outbox.on_online()
    await gw.entered.wait()
    with pytest.raises(OutboxError, match="already being sent"):
        outbox.edit(a.submission_ref, "too late")
    with pytest.raises(OutboxError, match="already being sent"):
        outbox.cancel(a.submission_ref)
    gw.hold.set()
    await outbox.idle()
    assert [e["text"] for e in gw.executed] == ["fixed"]


async def test_session_gone_is_reported_once_and_not_retried(store: Store) -> None:
    gw = FakeGateway(dedup=True)
    gw.script["prompt.submit"] = [RpcError(4001, "session not found")]
    gw.script["session.resume"] = [RpcError(4007, "resume target not found")]
    outbox = _make(store, gw)
    rec = Recorder(outbox, store)
    outbox.submit("p", "s1", "rt-old", "hello?")
    await outbox.flush()
    await outbox.flush()
    assert rec.of("hello?") == [DeliveryState.PENDING, DeliveryState.FAILED]
    assert [e for t, s, e in rec.states if s is DeliveryState.FAILED] == [SESSION_GONE]
    assert gw.methods() == ["prompt.submit", "session.resume"]
    assert outbox.entries() == []


async def test_each_profile_hears_only_of_its_own_prompts(store: Store) -> None:
    gw = FakeGateway(dedup=False)
    gw.script["prompt.submit"] = [RpcError(-32000, "the model refused")] * 2
    outbox = _make(store, gw)
    heard: dict[str, list[str]] = {"p": [], "q": []}
    for pid, texts in heard.items():
        outbox.on_state(lambda e, texts=texts: texts.append(e.text), pid)
    restored: list[str] = []
    outbox.on_restore(lambda e: restored.append(e.text) is None, "p")
    outbox.submit("p", "s1", "r1", "from p")
    outbox.submit("q", "s1", "r1", "from q")
    await outbox.idle()
    assert set(heard["p"]) == {"from p"} and set(heard["q"]) == {"from q"}
    assert restored == ["from p"]  # back in p's composer, never in q's
    # No composer of q listens: its refused prompt stays queued rather than vanish.
    assert [e.text for e in outbox.entries()] == ["from q"]


async def test_reaped_runtime_id_is_resumed_and_the_prompt_sent_there(store: Store) -> None:
    gw = FakeGateway(dedup=False)
    gw.script["prompt.submit"] = [RpcError(4001, "session not found")]
    store.upsert_session("p", "s1", runtime_id="rt-old")
    gw.on_ids = lambda key, runtime: store.upsert_session("p", key, runtime_id=runtime)
    outbox = _make(store, gw)
    outbox.submit("p", "s1", "rt-old", "still there?")
    await outbox.idle()
    assert [e["session"] for e in gw.executed] == ["rt-resumed"]


async def test_connection_lost_while_resuming_keeps_the_prompt_and_sends_it_once_later(
    store: Store,
) -> None:
    gw = FakeGateway(dedup=False)
    # The runtime id was reaped (4001), and the socket dies while the session is resumed;
    # after the reconnect the old runtime id is still unknown, the resume goes through.
    gw.script["prompt.submit"] = [RpcError(4001, "session not found")] * 2
    gw.script["session.resume"] = [LOSE]
    store.upsert_session("p", "s1", runtime_id="rt-old")
    gw.on_ids = lambda key, runtime: store.upsert_session("p", key, runtime_id=runtime)
    outbox = _make(store, gw)
    rec = Recorder(outbox, store)
    outbox.submit("p", "s1", "rt-old", "still there?")
    (worker,) = [t for t in asyncio.all_tasks() if t.get_name() == "outbox:s1"]
    await outbox.idle()
    assert worker.exception() is None  # the worker stopped for the reconnect, it did not crash
    (e,) = outbox.entries()
    assert e.state is DeliveryState.PENDING  # 4001 said it did not run: not ambiguous
    gw.online = True
    await outbox.flush()
    assert gw.executed == [{"session": "rt-resumed", "text": "still there?", "files": []}]
    assert outbox.entries() == [] and rec.restored == []


async def test_file_attachment_without_gateway_support_fails_clearly(
    store: Store, data_dir: Path
) -> None:
    from desktop.core.disk.attachments import AttachmentStore

    doc = AttachmentStore(data_dir).add(b"%PDF-1.4 ...", "report.pdf")
    gw = FakeGateway(dedup=False)
    outbox = _make(store, gw)
    rec = Recorder(outbox, store)
    outbox.submit("p", "s1", "rt1", "read this", [doc])
    await outbox.idle()
    failed = [e for t, s, e in rec.states if s is DeliveryState.FAILED]
    assert failed == ["this gateway does not accept file attachments (report.pdf)"]
    assert rec.restored[0][:2] == ("read this", (doc,)) and gw.calls == []
    gw2 = FakeGateway(dedup=False, file_attachments=True)
    outbox2 = _make(store, gw2)
    outbox2.submit("p", "s1", "rt1", "read this", [doc])
    await outbox2.idle()
    assert gw2.executed[0]["files"] == ["report.pdf"]
    assert gw2.methods()[0] == "file.attach_bytes"


async def test_restart_treats_in_flight_entries_as_ambiguous(store: Store, data_dir: Path) -> None:
    gw = FakeGateway(dedup=False, online=False)
    first = _make(store, gw)
    entry = first.submit("p", "s1", "rt1", "mid-send")
    store.outbox_update(entry.submission_ref, wire=Wire.SUBMITTED)  # died after writing it
    first.submit("p", "s1", "rt1", "queued behind")
    with Store(data_dir / "app.db") as again:
        legacy = FakeGateway(dedup=False)
        outbox = _make(again, legacy)
        states = {e.text: e.state for e in outbox.entries()}
        assert states == {
            "mid-send": DeliveryState.UNCONFIRMED,
            "queued behind": DeliveryState.PENDING,
        }
        await outbox.flush()
        assert legacy.calls == []  # neither replayed nor overtaken
        outbox.reconcile("s1", {"inflight": {"user": "mid-send"}})
        await outbox.idle()
        assert [e["text"] for e in legacy.executed] == ["queued behind"]


async def test_restart_on_dedup_gateway_resends_with_the_same_ref(store: Store) -> None:
    gw = FakeGateway(dedup=True, online=False)
    entry = _make(store, gw).submit("p", "s1", "rt1", "again")
    store.outbox_update(entry.submission_ref, wire=Wire.SUBMITTED)
    gw.online = True
    outbox = _make(store, gw)
    await outbox.flush()
    assert [p["submission_ref"] for p in gw.submits()] == [entry.submission_ref]
    assert outbox.entries() == []


async def test_not_connected_means_nothing_sent_and_it_stays_queued(store: Store) -> None:
    gw = FakeGateway(dedup=False)
    gw.script["prompt.submit"] = [NotConnectedError("gone")]
    outbox = _make(store, gw)
    outbox.submit("p", "s1", "rt1", "later")
    await outbox.idle()
    (e,) = outbox.entries()
    assert e.state is DeliveryState.PENDING and e.wire == Wire.NOTHING
    await outbox.flush()
    assert [x["text"] for x in gw.executed] == ["later"]


async def test_submit_that_cannot_be_persisted_sends_nothing(data_dir: Path) -> None:
    conns: list[sqlite3.Connection] = []

    def connect(p: str) -> sqlite3.Connection:
        conns.append(sqlite3.connect(p, isolation_level=None))
        return conns[-1]

    with Store(data_dir / "app.db", connect=connect) as store:
        gw = FakeGateway(dedup=True)
        outbox = _make(store, gw)
        conns[0].execute("PRAGMA query_only = ON")
        with pytest.raises(StorageError, match="read-only"):
            outbox.submit("p", "s1", "rt1", "hello")
        await outbox.idle()
        assert gw.calls == []
        conns[0].execute("PRAGMA query_only = OFF")
        outbox.submit("p", "s1", "rt1", "hello")
        await outbox.idle()
        assert len(gw.executed) == 1


async def test_lost_connection_while_staging_is_not_ambiguous(
    store: Store, image: Attachment
) -> None:
    gw = FakeGateway(dedup=False)
    gw.script["image.attach_bytes"] = [LOSE]
    outbox = _make(store, gw)
    outbox.submit("p", "s1", "rt1", "pic", [image])
    await outbox.idle()
    (e,) = outbox.entries()
    assert e.state is DeliveryState.PENDING  # the prompt itself was never written
    gw.online = True
    await outbox.flush()
    assert gw.executed == [{"session": "rt1", "text": "pic", "files": ["cat.png"]}]


async def test_aclose_cancels_workers_and_timers(store: Store) -> None:
    gw = FakeGateway(dedup=True)
    gw.hold = asyncio.Event()
    clock = ManualClock()
    outbox = _make(store, gw, clock)
    outbox.submit("p", "s1", "rt1", "x")
    await gw.entered.wait()
    await outbox.aclose()
    (e,) = outbox.entries()
    assert e.wire == Wire.SUBMITTED  # a restart will treat it as ambiguous
    assert clock.pending == 0


async def test_a_prompt_over_the_frame_limit_is_refused_and_one_already_stored_fails(
    store: Store,
) -> None:
    """A pasted 17 MB prompt: refused before it is stored (its frame would close the socket,
    1009, at every start); one an older version already stored fails with its size and the
    limit, and nothing of it is sent."""
    huge = "x" * (17 * 1024 * 1024)
    gw = FakeGateway(dedup=False)
    outbox = _make(store, gw)
    rec = Recorder(outbox, store)
    with pytest.raises(OutboxError, match=r"this message is 17\.0 MB .* at most 7\.8 MB"):
        outbox.submit("p", "s1", "rt1", huge)
    assert store.outbox_entries("p") == [] and gw.calls == []
    store.outbox_add(
        OutboxEntry(
            submission_ref="old-ref",
            seq=0,
            profile_id="p",
            session_key="s1",
            runtime_id="rt1",
            text=huge,
            attachments=(),
            created_at=0.0,
            history_mark=0,
        )
    )
    outbox.on_online("p")
    await outbox.idle()
    failed = [e for _, s, e in rec.states if s is DeliveryState.FAILED]
    assert len(failed) == 1 and "at most 7.8 MB" in failed[0]
    assert gw.calls == []  # never written: the connection stays up
