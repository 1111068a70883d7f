"""SessionRouter and the conversation reducer: reactivation, resume, replay, legacy rebuild."""

from __future__ import annotations

import asyncio
from typing import Any

from desktop.common.clock import ManualClock
from desktop.core.chats.conversation import Conversation
from desktop.core.chats.router import SessionRouter
from desktop.core.errors import RpcError
from desktop.core.link.epochs import MemoryEpochStore
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.link.protocol import Event
from desktop.core.link.supervisor import ConnectionSupervisor
from desktop.core.models import ChatMessage, ConnectionState, DeliveryState, Role
from tests.core.supervisor_fakes import FakeCaps, FakeNet, until

PROFILE = Profile(id="p", name="P", kind=ProfileKind.REMOTE, url="ws://127.0.0.1:9/api/ws")


class Gateway:
    """Scripted gateway state behind FakeNet.handler."""

    def __init__(self, net: FakeNet) -> None:
        self.net = net
        self.snapshots: dict[str, dict[str, Any]] = {}
        self.gone_runtime: set[str] = set()
        self.stored: dict[str, str] = {}  # stored id -> runtime id handed out on resume
        self.replay: dict[str, dict[str, Any]] = {}
        self.before_reply: list[Event] = []
        net.handler = self.handle

    def handle(self, method: str, params: dict[str, Any]) -> Any:
        sid = params.get("session_id", "")
        if method == "session.activate":
            if sid in self.gone_runtime:
                return RpcError(4001, "session not found", method=method)
            self._race()
            return self.snapshots.get(sid, {"session_id": sid, "messages": [], "running": False})
        if method == "session.resume":
            if sid not in self.stored:
                return RpcError(4007, "session not found", method=method)
            runtime = self.stored[sid]
            return {**self.snapshots.get(runtime, {"messages": []}), "session_id": runtime}
        if method == "session.events.since":
            return self.replay.get(sid, {"events": [], "complete": True})
        return RpcError(-32601, "unknown", method=method)

    def _race(self) -> None:
        # Frames the server pushes on the new socket before the activate reply.
        for ev in self.before_reply:
            self.net.clients[-1].emit(ev.type, ev.session_id, ev.seq, **ev.payload)
        self.before_reply = []


async def online(caps: FakeCaps | None = None) -> tuple[FakeNet, Gateway, ConnectionSupervisor]:
    net = FakeNet(caps=caps or FakeCaps())
    gw = Gateway(net)
    sup = ConnectionSupervisor(
        PROFILE,
        client_factory=net.factory,
        epoch_store=MemoryEpochStore(),
        clock=ManualClock(),
        random=lambda: 0.0,
    )
    return net, gw, sup


async def attached(sup: ConnectionSupervisor) -> tuple[SessionRouter, Conversation]:
    """A router following session s1 (runtime r1), connected and reattached."""
    router = router_of[sup] = SessionRouter(sup)
    conv = router.route("s1", "r1")
    sup.start()
    await synced(router, sup)
    return router, conv


async def reconnect(sup: ConnectionSupervisor, net: FakeNet) -> None:
    before = len(net.clients)
    sup.reconnect_now()
    await until(
        lambda: len(net.clients) > before and sup.status.state is ConnectionState.ONLINE, "back"
    )
    await synced(router_of[sup], sup)


router_of: dict[ConnectionSupervisor, SessionRouter] = {}


async def synced(router: SessionRouter, sup: ConnectionSupervisor) -> None:
    await until(
        lambda: sup.status.state is ConnectionState.ONLINE and router.synced_epoch == sup.epoch,
        "reactivation finished",
    )


def activates(net: FakeNet) -> list[str]:
    return [p["session_id"] for m, p in net.calls if m == "session.activate"]


def ev(type_: str, sid: str = "r1", seq: int | None = None, **payload: Any) -> Event:
    return Event(type_, sid, payload, seq)


# -- router -----------------------------------------------------------------------------------


async def test_exactly_one_activate_per_routed_session_per_reconnect() -> None:
    net, _, sup = await online()
    router = SessionRouter(sup)
    router_of[sup] = router
    for i in range(3):
        router.route(f"s{i}", f"r{i}")
    sup.start()
    await until(lambda: len(activates(net)) == 3, "first activation")
    for n in range(2, 7):
        await reconnect(sup, net)
        await until(lambda n=n: len(activates(net)) >= 3 * n, f"round {n}")
        await until(lambda: not any(router.session(k).pending for k in router.routed), "idle")
    assert sorted(activates(net)) == sorted([f"r{i}" for i in range(3)] * 6)
    assert router.activations == 18
    await router.close()
    await sup.close()


async def test_session_not_found_resumes_by_stored_id_and_adopts_new_runtime_id() -> None:
    net, gw, sup = await online()
    ids: list[tuple[str, str]] = []
    router = router_of[sup] = SessionRouter(
        sup, on_ids=lambda stored, runtime: ids.append((stored, runtime))
    )
    snaps: list[tuple[str, Any]] = []
    router.on_snapshot(lambda key, snap: snaps.append((key, snap.get("session_id"))))
    conv = router.route("stored-1", "r1")
    gw.gone_runtime.add("r1")  # reaped while we were away
    gw.stored["stored-1"] = "r9"
    gw.snapshots["r9"] = {"messages": [{"role": "user", "text": "hi"}], "running": False}
    sup.start()
    await until(lambda: router.runtime_id("stored-1") == "r9", "adopted")
    assert ids[-1] == ("stored-1", "r9")
    assert snaps == [("stored-1", "r9")]  # delivery sees the snapshot that reconciles submits
    assert [m for m, _ in net.calls] == ["session.activate", "session.resume"]
    await until(lambda: [m.text for m in conv.messages] == ["hi"], "history")
    await synced(router, sup)
    net.clients[-1].emit("message.delta", "r9", text="from the new runtime id")
    net.clients[-1].emit("message.delta", "r1", text="old id: not ours any more")
    assert conv.messages[-1].text == "from the new runtime id"
    await router.close()
    await sup.close()


async def test_resume_target_gone_is_reported() -> None:
    _net, gw, sup = await online()
    gone: list[tuple[str, str]] = []
    router = router_of[sup] = SessionRouter(sup, on_gone=lambda key, why: gone.append((key, why)))
    router.route("stored-x", "rx")
    gw.gone_runtime.add("rx")
    sup.start()
    await until(lambda: bool(gone), "gone reported")
    assert gone == [("stored-x", "session not found")]
    assert router.session("stored-x").gone  # type: ignore[union-attr]
    await router.close()
    await sup.close()


async def test_a_session_deleted_while_its_resume_is_in_flight_stays_deleted() -> None:
    net, gw, sup = await online()
    ids: list[tuple[str, str]] = []
    router = router_of[sup] = SessionRouter(sup, on_ids=lambda s, r: ids.append((s, r)))
    snaps: list[str] = []
    router.on_snapshot(lambda key, _snap: snaps.append(key))
    sup.start()
    await until(lambda: sup.status.state is ConnectionState.ONLINE, "online")
    reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    net.handler = lambda method, params: (
        reply if method == "session.resume" else gw.handle(method, params)
    )
    opening = asyncio.ensure_future(router.open("stored-d"))
    await until(lambda: [m for m, _ in net.calls][-1:] == ["session.resume"], "resume sent")
    router.unroute("stored-d")  # the user deleted the chat meanwhile
    reply.set_result({"session_id": "r-late", "messages": [], "running": False})
    await opening
    assert ids == [] and snaps == [], "a late resume answer must not bring the chat back"
    assert router.runtime_id("stored-d") is None
    await router.close()
    await sup.close()


async def test_replay_feeds_missed_events_once_deduplicated_by_seq() -> None:
    caps = FakeCaps(event_replay=True, replay_epoch="e1")
    net, gw, sup = await online(caps)
    router = SessionRouter(sup)
    router_of[sup] = router
    conv = router.route("s1", "r1")
    conv.append_local(ChatMessage(id="u", role=Role.USER, text="q"))
    sup.start()
    await until(lambda: len(activates(net)) == 1, "activated")
    await synced(router, sup)
    client = net.clients[-1]
    client.emit("message.start", "r1", 1)
    client.emit("message.delta", "r1", 2, text="Hel")
    client.emit("message.delta", "r1", 2, text="Hel")  # duplicate frame
    client.emit("message.delta", "r1", 3, text="lo")
    gw.snapshots["r1"] = {"session_id": "r1", "running": True, "messages": []}
    gw.replay["r1"] = {
        "events": [
            {"type": "message.delta", "session_id": "r1", "seq": 3, "payload": {"text": "lo"}},
            {"type": "message.delta", "session_id": "r1", "seq": 4, "payload": {"text": " wor"}},
            {"type": "message.delta", "session_id": "r1", "seq": 5, "payload": {"text": "ld"}},
        ],
        "complete": True,
    }
    # The live stream resumes on the new socket before the replay is in: seq 5 twice.
    gw.before_reply = [ev("message.delta", seq=5, text="ld"), ev("message.delta", seq=6, text="!")]
    await reconnect(sup, net)
    await until(lambda: not router.session("s1").pending and conv.last_seq == 6, "replayed")
    replies = [m for m in conv.messages if m.role is Role.ASSISTANT]
    assert [m.text for m in replies] == ["Hello world!"]
    assert conv.running
    since = [p for m, p in net.calls if m == "session.events.since"]
    assert since == [{"session_id": "r1", "last_seen": 3}]
    await router.close()
    await sup.close()


async def test_sequence_gap_is_filled_from_the_replay_buffer() -> None:
    caps = FakeCaps(event_replay=True, replay_epoch="e1")
    net, gw, sup = await online(caps)
    router, conv = await attached(sup)
    gw.replay["r1"] = {
        "events": [
            {"type": "message.delta", "session_id": "r1", "seq": 2, "payload": {"text": "b"}}
        ]
    }
    client = net.clients[-1]
    client.emit("message.delta", "r1", 1, text="a")
    client.emit("message.delta", "r1", 3, text="c")  # seq 2 went missing
    await until(lambda: conv.last_seq == 3, "gap filled")
    assert conv.messages[-1].text == "abc"
    await router.close()
    await sup.close()


async def test_new_replay_epoch_resets_watermarks_and_reloads_the_snapshot() -> None:
    caps = FakeCaps(event_replay=True, replay_epoch="e1")
    net, gw, sup = await online(caps)
    router, conv = await attached(sup)
    net.clients[-1].emit("message.delta", "r1", 40, text="old text")
    assert conv.last_seq == 40
    net.caps = FakeCaps(event_replay=True, replay_epoch="e2")  # the gateway restarted
    gw.snapshots["r1"] = {
        "session_id": "r1",
        "running": False,
        "messages": [{"role": "assistant", "text": "old text"}],
    }
    await reconnect(sup, net)
    await until(lambda: conv.last_seq == 0 and not router.session("s1").pending, "reset")  # type: ignore[union-attr]
    net.clients[-1].emit("message.delta", "r1", 1, text="new turn")  # seq 1 again: not a dup
    assert [m.text for m in conv.messages] == ["old text", "new turn"]
    assert not any(m == "session.events.since" for m, _ in net.calls)
    await router.close()
    await sup.close()


async def test_legacy_rebuilds_the_reply_from_inflight_without_doubling() -> None:
    net, gw, sup = await online()  # legacy: no replay, no seq
    router, conv = await attached(sup)
    conv.append_local(
        ChatMessage(id="u1", role=Role.USER, text="say hello", delivery=DeliveryState.CONFIRMED)
    )
    client = net.clients[-1]
    client.emit("message.start", "r1")
    client.emit("message.delta", "r1", text="Hel")
    client.emit("message.delta", "r1", text="lo")
    # Detached: " wo" is emitted to nobody; the snapshot already holds it and "rld" as well,
    # and "rld" also races the activate reply on the new socket.
    gw.snapshots["r1"] = {
        "session_id": "r1",
        "running": True,
        "messages": [],
        "inflight": {"user": "say hello", "assistant": "Hello world", "streaming": True},
    }
    gw.before_reply = [ev("message.delta", text="rld")]
    await reconnect(sup, net)
    assert [(m.role, m.text) for m in conv.messages] == [
        (Role.USER, "say hello"),
        (Role.ASSISTANT, "Hello world"),
    ]
    net.clients[-1].emit("message.delta", "r1", text=" again")
    net.clients[-1].emit("message.complete", "r1", text="Hello world again", status="complete")
    replies = [m for m in conv.messages if m.role is Role.ASSISTANT]
    assert [(m.text, m.streaming) for m in replies] == [("Hello world again", False)]
    assert not conv.running
    await router.close()
    await sup.close()


async def test_idle_snapshot_clears_a_stale_busy_state() -> None:
    net, gw, sup = await online()
    router, conv = await attached(sup)
    net.clients[-1].emit("message.delta", "r1", text="partial")
    assert conv.running
    gw.snapshots["r1"] = {
        "session_id": "r1",
        "running": False,
        "messages": [{"role": "assistant", "text": "partial and finished"}],
    }
    await reconnect(sup, net)
    await until(lambda: not conv.running, "idle")
    assert [(m.text, m.streaming) for m in conv.messages] == [("partial and finished", False)]
    await router.close()
    await sup.close()


# -- reducer ----------------------------------------------------------------------------------


def test_reducer_streams_thinking_tools_and_ignores_reasoning_available() -> None:
    conv = Conversation("k")
    changes: list[int] = []
    conv.add_listener(lambda c: changes.append(len(c.messages)))
    conv.apply(ev("message.start", seq=1))
    conv.apply(ev("thinking.delta", seq=2, text="hmm "))
    assert conv.status_text == "hmm"  # the spinner line, not the reasoning fold
    conv.apply(ev("reasoning.delta", seq=3, text="ok"))
    conv.apply(ev("tool.generating", seq=4, name="search"))
    conv.apply(ev("tool.start", seq=5, tool_id="t1", name="search", context="cats"))
    conv.apply(ev("tool.complete", seq=6, tool_id="t1", name="search", summary="3 hits"))
    conv.apply(ev("message.delta", seq=7, text="Answer"))
    conv.apply(ev("reasoning.available", seq=8, text="Answer (the whole thing again)"))
    conv.apply(ev("message.delta", seq=7, text="Answer"))  # duplicate seq
    conv.apply(ev("message.complete", seq=9, text="Answer.", status="complete"))
    [msg] = conv.messages
    assert msg.text == "Answer." and msg.thinking == "ok" and not msg.streaming
    assert [(t.id, t.name, t.args, t.output, t.done) for t in msg.tools] == [
        ("t1", "search", "cats", "3 hits", True)
    ]
    assert not conv.running and changes and conv.status_text == ""


def test_a_repeated_completion_without_seq_does_not_add_a_second_bubble() -> None:
    conv = Conversation("k")
    conv.apply(ev("message.delta", text="Hi"))
    conv.apply(ev("message.complete", text="Hi there", status="complete"))
    conv.apply(ev("message.complete", text="Hi there", status="complete"))
    assert [(m.role, m.text) for m in conv.messages] == [(Role.ASSISTANT, "Hi there")]


def test_error_event_ends_running_and_fails_the_reply_with_its_cause() -> None:
    """One failed turn is one bubble: the reply says it failed and why (no notice beside it)."""
    conv = Conversation("k")
    conv.apply(ev("message.start"))
    assert conv.running
    conv.apply(ev("error", message="agent could not start"))
    assert not conv.running
    [reply] = conv.messages
    assert reply.role is Role.ASSISTANT and not reply.streaming
    assert (reply.status, reply.cause) == ("error", "agent could not start")


def test_snapshot_reload_keeps_unconfirmed_local_prompts() -> None:
    conv = Conversation("k")
    conv.append_local(
        ChatMessage(id="u", role=Role.USER, text="draft sent", delivery=DeliveryState.PENDING)
    )
    conv.load_snapshot({"messages": [{"role": "user", "text": "earlier"}], "running": False})
    assert [m.text for m in conv.messages] == ["earlier", "draft sent"]


def test_a_message_cut_to_fit_a_frame_says_so_and_a_cut_completion_keeps_the_stream() -> None:
    conv = Conversation("k")
    cut = {"role": "user", "text": "x" * 10, "truncated": True, "text_chars": 5_000_000}
    conv.load_snapshot({"messages": [cut], "running": False})
    shown = conv.messages[0].text
    assert shown.startswith("x" * 10) and "5,000,000 characters was cut" in shown
    conv.apply(Event("message.start", "r", {}, 1))
    conv.apply(Event("message.delta", "r", {"text": "the whole streamed reply"}, 2))
    done = {"text": "the whole", "truncated": True, "status": "complete"}
    conv.apply(Event("message.complete", "r", done, 3))
    assert conv.messages[-1].text == "the whole streamed reply" and not conv.running


async def test_a_reclaimed_session_is_resumed_by_stored_id_without_a_failed_activate() -> None:
    """Hermes 0.22 broadcasts `session.reclaimed {session_id, stored_session_id, reason}` when
    it unloads an idle detached session: the next attach resumes by stored id at once (no 4001
    first), and the new runtime's events (numbered from 1) show, the earlier reply kept."""
    net, gw, sup = await online()
    router, conv = await attached(sup)
    conv.apply(ev("message.start", seq=5))
    conv.apply(ev("message.complete", seq=6, text="first reply"))
    gw.gone_runtime.add("r1")
    gw.stored["s1"] = "r2"
    payload = {"session_id": "r1", "stored_session_id": "s1", "reason": "ws_orphan_reap"}
    net.clients[-1].emit_event(Event("session.reclaimed", "", payload, None))
    await until(lambda: router.runtime_id("s1") is None, "runtime id forgotten")
    before = len(activates(net))
    await router.reattach("s1")
    assert len(activates(net)) == before  # straight to resume: no activate refused with 4001
    assert router.runtime_id("s1") == "r2"
    net.clients[-1].emit("message.start", "r2", 1)
    net.clients[-1].emit("message.delta", "r2", 2, text="second")
    await until(lambda: conv.messages[-1].text == "second", "the new runtime's reply shows")
    assert [m.text for m in conv.messages] == ["first reply", "second"]
    await router.close()
    await sup.close()
