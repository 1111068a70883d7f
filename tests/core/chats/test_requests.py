"""Approvals and questions across reconnects: the router's snapshots drive the pending cards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop.common.clock import ManualClock
from desktop.core.chats.conversation import Conversation
from desktop.core.chats.index import SessionIndex
from desktop.core.chats.requests import APPROVAL_CHOICES, WAITING_KIND
from desktop.core.disk.store import Store
from desktop.core.models import ChatMessage, DeliveryState, Role, ToolCall
from tests.core.chats.test_router import attached, ev, online, reconnect

APPROVAL = {
    "command": "chmod 777 /tmp/x",
    "description": "world-writable permissions",
    "request_id": "ap1",
    "choices": ["once", "session", "always", "deny"],
}


def running(**extra: Any) -> dict[str, Any]:
    return {
        "session_id": "r1",
        "running": True,
        "status": "working",
        "messages": [{"role": "user", "text": "fix perms"}],
        "inflight": {"user": "fix perms", "assistant": "", "streaming": True},
        **extra,
    }


def shown(conv: Conversation) -> list[tuple[str, str]]:
    return [(r.kind, r.request_id) for r in conv.pending.values()]


async def test_an_approval_emitted_while_offline_is_shown_from_the_activate_snapshot() -> None:
    net, gw, sup = await online()
    router, conv = await attached(sup)
    gw.snapshots["r1"] = running(pending_approval=APPROVAL)
    await reconnect(sup, net)
    [request] = conv.pending.values()
    assert (request.kind, request.request_id, request.title) == (
        "approval",
        "ap1",
        "chmod 777 /tmp/x",
    )
    assert request.choices == APPROVAL_CHOICES and request.detail == "world-writable permissions"
    # The live event for the same request (a racing frame) does not add a second card.
    net.clients[-1].emit("approval.request", "r1", **APPROVAL)
    assert shown(conv) == [("approval", "ap1")]
    # Another reconnect with the same pending approval: still one card.
    await reconnect(sup, net)
    assert shown(conv) == [("approval", "ap1")]
    await router.close()
    await sup.close()


async def test_a_request_answered_elsewhere_or_expired_disappears() -> None:
    net, gw, sup = await online()
    router, conv = await attached(sup)
    client = net.clients[-1]
    client.emit("approval.request", "r1", **APPROVAL)
    client.emit("clarify.request", "r1", question="Which env?", choices=["a", "b"], request_id="c1")
    assert shown(conv) == [("approval", "ap1"), ("clarify", "c1")]
    # Answered on another client while we were away: the snapshot lists neither.
    gw.snapshots["r1"] = running()
    await reconnect(sup, net)
    assert conv.pending == {}
    net.clients[-1].emit("sudo.request", "r1", request_id="s1")
    assert shown(conv) == [("sudo", "s1")] and conv.pending["s1"].masked
    net.clients[-1].emit("sudo.expire", "r1", request_id="s1")
    assert conv.pending == {}
    await router.close()
    await sup.close()


async def test_legacy_waiting_turn_says_the_app_cannot_show_its_question() -> None:
    # 0.19: the snapshot says only status "waiting"; the question was sent to no socket.
    net, gw, sup = await online()
    router, conv = await attached(sup)
    gw.snapshots["r1"] = running(status="waiting")
    await reconnect(sup, net)
    [request] = conv.pending.values()
    assert request.kind == WAITING_KIND and "cannot show" in request.title
    # The turn ends (e.g. the user stopped it): the notice goes with it.
    net.clients[-1].emit("message.complete", "r1", text="", status="interrupted")
    assert conv.pending == {}
    await router.close()
    await sup.close()


async def test_legacy_card_shown_before_a_reset_survives_the_reconnect() -> None:
    # 0.19 approvals carry no request id and no snapshot lists them: a card already on
    # screen stays while the turn runs, a clarify stays while the status says "waiting".
    net, gw, sup = await online()
    router, conv = await attached(sup)
    client = net.clients[-1]
    client.emit("approval.request", "r1", command="chmod 777 x", description="perms")
    [approval] = conv.pending.values()
    assert not approval.server_id
    gw.snapshots["r1"] = running()
    await reconnect(sup, net)
    assert list(conv.pending) == [approval.request_id]
    net.clients[-1].emit("message.complete", "r1", text="done", status="complete")
    net.clients[-1].emit("clarify.request", "r1", question="Q?", choices=[], request_id="c9")
    gw.snapshots["r1"] = running(status="waiting")
    await reconnect(sup, net)
    assert shown(conv) == [("clarify", "c9")]  # not replaced by the "cannot show" notice
    await router.close()
    await sup.close()


async def test_an_idle_snapshot_clears_every_card() -> None:
    net, gw, sup = await online()
    router, conv = await attached(sup)
    net.clients[-1].emit("approval.request", "r1", **APPROVAL)
    gw.snapshots["r1"] = {"session_id": "r1", "running": False, "messages": []}
    await reconnect(sup, net)
    assert conv.pending == {}
    await router.close()
    await sup.close()


def test_thinking_is_a_status_line_and_reasoning_the_fold() -> None:
    conv = Conversation("k")
    conv.apply(ev("message.start"))
    conv.apply(ev("thinking.delta", text="( •_•)>⌐■-■ processing..."))
    conv.apply(ev("thinking.delta", text="processing...□□□□"))
    assert conv.status_text == "processing...□□□□"  # replaced, not appended
    conv.apply(ev("reasoning.delta", text="Let me "))
    conv.apply(ev("reasoning.delta", text="think"))
    conv.apply(ev("thinking.delta", text=""))
    assert conv.status_text == ""
    conv.apply(ev("reasoning.available", text="The whole answer"))
    conv.apply(ev("message.delta", text="Answer"))
    usage = {"input": 120, "output": 8, "context_used": 120, "context_max": 131072}
    conv.apply(ev("message.complete", text="Answer", usage=usage, reasoning="Let me think"))
    [msg] = conv.messages
    assert (msg.text, msg.thinking, msg.usage) == ("Answer", "Let me think", usage)


def test_final_reasoning_field_fills_a_fold_whose_deltas_were_lost() -> None:
    conv = Conversation("k")
    conv.apply(ev("message.delta", text="Answer"))
    conv.apply(ev("message.complete", text="Answer", reasoning="because"))
    assert conv.messages[0].thinking == "because"


def test_snapshot_rebuilds_one_bubble_per_reply_with_its_tools_and_reasoning() -> None:
    conv = Conversation("k")
    # What was on screen (live, or from the local store after a restart).
    conv.seed(
        [
            ChatMessage("k:0", Role.USER, "fix perms", created_at=100.0),
            ChatMessage("k:1", Role.ASSISTANT, "Done.", created_at=101.0, usage={"output": 3}),
        ]
    )
    conv.messages[1].tools = []
    snapshot = {
        "running": False,
        "messages": [
            {"role": "user", "text": "fix perms"},
            {"role": "assistant", "text": "Let me look", "reasoning": "need ls"},
            {"role": "tool", "name": "terminal", "context": "ls -l"},
            {"role": "tool", "name": "terminal", "context": "chmod 644 x"},
            {"role": "assistant", "text": "Done.", "reasoning": "fixed"},
            {"role": "user", "text": "thanks"},
        ],
    }
    conv.load_snapshot(snapshot)
    assert [(m.role, m.text) for m in conv.messages] == [
        (Role.USER, "fix perms"),
        (Role.ASSISTANT, "Done."),
        (Role.USER, "thanks"),
    ]
    reply = conv.messages[1]
    assert [(t.name, t.args, t.done) for t in reply.tools] == [
        ("terminal", "ls -l", True),
        ("terminal", "chmod 644 x", True),
    ]
    assert reply.thinking == "need ls\n\nfixed"
    # Times and usage the gateway's rows lack come from the bubbles already shown.
    assert (conv.messages[0].created_at, reply.created_at, reply.usage) == (
        100.0,
        101.0,
        {"output": 3},
    )
    assert conv.messages[0].delivery is DeliveryState.CONFIRMED


def test_times_carry_over_when_only_the_end_of_a_long_history_was_cached() -> None:
    conv = Conversation("k")
    rows: list[dict[str, Any]] = []
    for i in range(300):
        rows += [{"role": "user", "text": f"q{i}"}, {"role": "assistant", "text": f"a{i}"}]
    # The local cache holds the last 200 bubbles, with their times.
    tail = [
        ChatMessage(f"k:{i}", Role.USER if i % 2 == 0 else Role.ASSISTANT, r["text"], created_at=i)
        for i, r in enumerate(rows)
    ][-200:]
    conv.seed(tail)
    conv.load_snapshot({"running": False, "messages": rows})
    assert len(conv.messages) == 600
    assert [m.created_at for m in conv.messages[-200:]] == [float(i) for i in range(400, 600)]
    assert conv.messages[1].created_at == 0.0  # not shown before: nothing to carry


def test_tools_usage_and_times_survive_a_restart_through_the_local_store(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "hermes-qt.sqlite3"))
    try:
        index = SessionIndex("p", store, ManualClock(), lambda *_: None)
        conv = Conversation("s1")
        conv.seed([ChatMessage("s1:0", Role.USER, "fix perms", created_at=100.0)])
        conv.messages[0].delivery = DeliveryState.CONFIRMED
        reply = ChatMessage("s1:1", Role.ASSISTANT, "Done.", thinking="hm", created_at=101.0)
        reply.tools = [ToolCall("t1", "terminal", "chmod 644 x", '{"exit_code": 0}', done=True)]
        reply.usage = {"input": 10, "output": 2}
        conv.messages.append(reply)
        index.cache_conversation("s1", conv)
        # A new run: the cache is what the window shows before the gateway answers.
        again = SessionIndex("p", store, ManualClock(), lambda *_: None).cached_messages("s1")
        [user_row, cached] = again
        assert (user_row.text, user_row.created_at) == ("fix perms", 100.0)
        assert (cached.text, cached.thinking, cached.created_at) == ("Done.", "hm", 101.0)
        assert [(t.name, t.args, t.output, t.done) for t in cached.tools] == [
            ("terminal", "chmod 644 x", '{"exit_code": 0}', True)
        ]
        assert cached.usage == {"input": 10, "output": 2}
    finally:
        store.close()
