"""Hermes 0.22's server->client requests in a conversation: shown once, merged with the
snapshot's `open_requests` after a reconnect, withdrawn by `request.cancel`; tool errors."""

from __future__ import annotations

import json
from typing import Any

from desktop.core.chats.conversation import Conversation
from desktop.core.chats.requests import clarify_result, server_request
from desktop.core.link.protocol import ServerRequest
from desktop.core.models import Role
from tests.core.chats.test_requests import running, shown
from tests.core.chats.test_router import attached, ev, online, reconnect
from tests.core.supervisor_fakes import FakeCaps

# As captured from 0.22.2 (abridged): the same approval as a request and in pending_approval.
APPROVAL = {
    "session_id": "r1",
    "command": "rm -rf /tmp/victim",
    "description": "delete in root path",
    "request_id": "09d4eee8",
    "choices": ["once", "session", "always", "deny"],
}
OPEN_APPROVAL = {"id": "srq-1d39", "method": "approval", "params": APPROVAL}
CLARIFY = {
    "id": "srq-732e",
    "method": "clarify",
    "params": {
        "session_id": "r1",
        "questions": [
            {"qid": "q0", "question": "Which colour?", "choices": ["red (Recommended)", "blue"]},
            {"qid": "q1", "question": "Which sizes?", "choices": ["S", "M"], "multi_select": True},
            {"qid": "q2", "question": "Anything else?", "choices": None},
        ],
    },
}


def srq(item: dict[str, Any]) -> Any:
    return ServerRequest(item["id"], item["method"], item["params"]).as_event()


def waiting(**extra: Any) -> dict[str, Any]:
    return running(status="waiting", **extra)


async def test_a_request_asked_live_shows_once_and_the_snapshot_keeps_it_one_card() -> None:
    net, gw, sup = await online(FakeCaps(event_replay=False))
    router, conv = await attached(sup)
    conv.apply(ev("message.start"))
    net.clients[-1].emit_event(srq(OPEN_APPROVAL))
    net.clients[-1].emit_event(srq(OPEN_APPROVAL))  # the same request again
    [card] = conv.pending.values()
    assert (card.kind, card.request_id, card.reply_to, card.gateway_id) == (
        "approval",
        "srq-1d39",
        "srq-1d39",
        "09d4eee8",
    )
    assert card.title == "rm -rf /tmp/victim"
    # Reconnect: 0.22 lists it twice (pending_approval, open_requests) and says "waiting".
    gw.snapshots["r1"] = waiting(pending_approval=APPROVAL, open_requests=[OPEN_APPROVAL])
    await reconnect(sup, net)
    assert shown(conv) == [("approval", "srq-1d39")]  # no second, "cannot show" card
    # Withdrawn (interrupted): the card goes before the turn ends.
    net.clients[-1].emit("request.cancel", "r1", id="srq-1d39", method="approval")
    assert conv.pending == {} and conv.running
    await router.close()
    await sup.close()


async def test_a_request_asked_while_offline_comes_from_open_requests_once() -> None:
    net, gw, sup = await online(FakeCaps(event_replay=True, replay_epoch="e1"))
    router, conv = await attached(sup)
    conv.apply(ev("message.start", seq=1))
    conv.apply(ev("message.delta", seq=2, text="checking"))
    # Caught up by replay (0.22): the snapshot is not loaded, only its open requests.
    gw.snapshots["r1"] = waiting(pending_approval=APPROVAL, open_requests=[OPEN_APPROVAL])
    gw.replay["r1"] = {"events": [], "complete": True}
    await reconnect(sup, net)
    assert shown(conv) == [("approval", "srq-1d39")]
    assert [m.text for m in conv.messages if m.role is Role.ASSISTANT] == ["checking"]
    # Answered: gone; a later snapshot without it keeps it gone.
    conv.answered("srq-1d39")
    gw.snapshots["r1"] = running()
    await reconnect(sup, net)
    assert conv.pending == {}
    await router.close()
    await sup.close()


def test_a_request_the_snapshot_no_longer_lists_is_gone_and_turn_end_clears_all() -> None:
    conv = Conversation("s1")
    conv.apply(ev("message.start"))
    conv.apply(srq(CLARIFY))
    conv.load_snapshot(waiting(open_requests=[OPEN_APPROVAL]))
    assert shown(conv) == [("approval", "srq-1d39")]
    conv.apply(ev("message.complete", text="done"))
    assert conv.pending == {}


def test_clarify_with_several_questions_and_its_answer() -> None:
    card = server_request(CLARIFY)
    assert card is not None and card.kind == "clarify"
    assert [(q.qid, q.text, q.choices, q.multi_select) for q in card.questions] == [
        ("q0", "Which colour?", ("red (Recommended)", "blue"), False),
        ("q1", "Which sizes?", ("S", "M"), True),
        ("q2", "Anything else?", (), False),
    ]
    assert card.title == "The agent asks 3 questions"
    picked = json.dumps(["S", "M"])
    answer = {"q0": "blue", "q1": picked, "q2": "soon"}
    assert clarify_result(card, answer) == {"answers": answer}
    # One question: a plain text answers it by its qid.
    one = server_request({**CLARIFY, "params": {"questions": CLARIFY["params"]["questions"][:1]}})
    assert one is not None and one.title == "Which colour?"
    assert one.choices == ("red (Recommended)", "blue")
    assert clarify_result(one, "red") == {"answers": {"q0": "red"}}
    # Kinds this app does not answer are not shown.
    assert server_request({"id": "srq-9", "method": "tour", "params": {}}) is None


def test_a_tool_whose_result_holds_an_error_shows_failed() -> None:
    conv = Conversation("s1")
    conv.apply(ev("message.start"))
    conv.apply(ev("tool.start", tool_id="c1", name="read_file", context="zzz.txt"))
    conv.apply(
        ev(
            "tool.complete",
            tool_id="c1",
            name="read_file",
            result={"content": "", "error": "File not found: zzz.txt", "not_found": True},
        )
    )
    conv.apply(ev("tool.start", tool_id="c2", name="terminal"))
    conv.apply(ev("tool.complete", tool_id="c2", name="terminal", result={"error": None}))
    [reply] = [m for m in conv.messages if m.role is Role.ASSISTANT]
    assert [(t.name, t.done, t.error) for t in reply.tools] == [
        ("read_file", True, True),
        ("terminal", True, False),
    ]
    assert reply.tools[0].output == "File not found: zzz.txt"
