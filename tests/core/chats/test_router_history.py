"""What a chat shows of its history when a gateway omits it from the snapshot (0.20.1, 0.22).

A scripted gateway answers with the shapes the real lines put on the wire (see
docs/protocol.md): `messages: [], messages_omitted: true` with a raw-row `message_count`;
`session.history {session_id}` with the whole history and no paging; 0.22's
`session.events.since` result `{events, latest_seq, truncated, count, epoch, open_requests}`.
"""

from __future__ import annotations

from typing import Any

from desktop.core.chats.router import SessionRouter, omits_messages
from desktop.core.errors import RpcError
from desktop.core.models import ChatMessage, Role
from tests.core.chats.test_router import online, reconnect, router_of, synced
from tests.core.supervisor_fakes import FakeCaps, FakeNet, until

TWO_TURNS: list[dict[str, Any]] = [
    {"role": "user", "text": "first question", "row_id": 1},
    {"role": "tool", "name": "terminal", "context": "echo hi"},
    {"role": "assistant", "text": "first answer", "row_id": 3},
    {"role": "user", "text": "second question", "row_id": 4},
    {"role": "assistant", "text": "second answer", "row_id": 5},
]
# 0.20.1/0.22 idle, asked with omit_messages: a raw row count (the tool-call row counts too).
OMITTED = {"messages": [], "messages_omitted": True, "message_count": 6, "running": False}


class HermesLike:
    """session.activate/resume/history/events.since as 0.20.1 and 0.22 answer them."""

    def __init__(self, net: FakeNet) -> None:
        self.history: list[dict[str, Any]] = list(TWO_TURNS)
        self.history_error: RpcError | None = None
        self.replay: dict[str, Any] | None = None
        self.snapshot: dict[str, Any] = dict(OMITTED)
        net.handler = self.handle

    def handle(self, method: str, params: dict[str, Any]) -> Any:
        sid = params.get("session_id", "")
        if method in ("session.activate", "session.resume"):
            return {**self.snapshot, "session_id": "r1" if method == "session.resume" else sid}
        if method == "session.history":
            if set(params) != {"session_id"}:  # 0.22 refuses offset/limit (4000)
                return RpcError(4000, f"invalid params: {sorted(params)}", method=method)
            if self.history_error is not None:
                return self.history_error
            return {"count": len(self.history) + 1, "messages": list(self.history)}
        if method == "session.events.since" and self.replay is not None:
            return self.replay
        return RpcError(-32601, "unknown method", method=method)


def texts(router: SessionRouter, key: str = "s1") -> list[str]:
    conv = router.conversation(key)
    assert conv is not None
    return [m.text for m in conv.messages]


def history_calls(net: FakeNet) -> list[dict[str, Any]]:
    return [p for m, p in net.calls if m == "session.history"]


def test_which_snapshots_omit_their_messages() -> None:
    assert omits_messages(OMITTED)
    assert omits_messages({"message_count": 3})  # the embedded gateway: no list at all
    assert omits_messages({"messages": [], "message_count": 2})  # empty beside a count
    assert not omits_messages({"messages": TWO_TURNS, "message_count": 6})  # 0.19
    assert not omits_messages({"messages": [], "message_count": 0})  # a new session
    assert not omits_messages({"messages": [], "messages_omitted": False})


async def test_an_omitted_snapshot_loads_the_whole_history_without_paging_params() -> None:
    net, _, sup = await online()
    gw = HermesLike(net)
    router = router_of[sup] = SessionRouter(sup)
    router.route("s1", "r1")
    sup.start()
    await synced(router, sup)
    assert texts(router) == ["first question", "first answer", "second question", "second answer"]
    # Only the id: 0.22 would refuse offset/limit, 0.19/0.20.1 would ignore them.
    assert history_calls(net) == [{"session_id": "r1"}]
    await reconnect(sup, net)
    assert len(texts(router)) == 4 and len(history_calls(net)) == 2
    gw.history = gw.history[:3]  # the gateway's own history says one turn now
    await reconnect(sup, net)
    assert texts(router) == ["first question", "first answer"]
    await router.close()
    await sup.close()


async def test_a_refused_history_keeps_what_is_shown_and_is_fetched_on_the_next_connect() -> None:
    net, _, sup = await online()
    gw = HermesLike(net)
    gw.history_error = RpcError(5000, "database is locked", method="session.history")
    router = router_of[sup] = SessionRouter(sup)
    conv = router.route("s1", "r1")
    cached = [
        ChatMessage(id="s1:0", role=Role.USER, text="first question"),
        ChatMessage(id="s1:2", role=Role.ASSISTANT, text="first answer"),
    ]
    conv.seed(cached)  # what the local cache showed at start
    sup.start()
    await synced(router, sup)
    assert texts(router) == ["first question", "first answer"], "the cache must stay shown"
    gw.history_error = None
    await reconnect(sup, net)
    assert texts(router)[-1] == "second answer"
    await router.close()
    await sup.close()


async def test_open_of_an_omitted_snapshot_shows_the_history() -> None:
    net, _, sup = await online()
    HermesLike(net)
    router = router_of[sup] = SessionRouter(sup)
    sup.start()
    await until(lambda: sup.status.state.name == "ONLINE", "online")
    await router.open("s1")
    assert texts(router)[-1] == "second answer"
    await router.close()
    await sup.close()


def _replayed(*, truncated: bool, epoch: str = "e1") -> dict[str, Any]:
    return {
        "events": [
            {"type": "message.start", "session_id": "r1", "seq": 8},
            {"type": "message.delta", "session_id": "r1", "seq": 9, "payload": {"text": "HOLE"}},
        ],
        "latest_seq": 9,
        "truncated": truncated,
        "count": 2,
        "epoch": epoch,
        "open_requests": [],
    }


async def _replay_rig() -> tuple[FakeNet, HermesLike, SessionRouter]:
    net, _, sup = await online(FakeCaps(event_replay=True, replay_epoch="e1"))
    gw = HermesLike(net)
    router = router_of[sup] = SessionRouter(sup)
    conv = router.route("s1", "r1")
    sup.start()
    await synced(router, sup)
    net.clients[-1].emit("session.info", "r1", 7)
    assert conv.last_seq == 7
    return net, gw, router


async def test_a_022_replay_feeds_its_events() -> None:
    net, gw, router = await _replay_rig()
    gw.replay = _replayed(truncated=False)
    await reconnect(router._sup, net)
    conv = router.conversation("s1")
    assert conv is not None and conv.last_seq == 9
    assert texts(router)[-1] == "HOLE" and len(history_calls(net)) == 1  # no reload
    await router.close()
    await router._sup.close()


async def test_a_truncated_or_foreign_022_replay_rebuilds_from_snapshot_and_history() -> None:
    for replay in (_replayed(truncated=True), _replayed(truncated=False, epoch="other")):
        net, gw, router = await _replay_rig()
        gw.replay = replay
        gw.history.append({"role": "user", "text": "third question"})
        await reconnect(router._sup, net)
        assert "HOLE" not in texts(router), "a replay with holes must not be applied"
        assert texts(router)[-1] == "third question"
        await router.close()
        await router._sup.close()
