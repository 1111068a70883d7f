"""Branch from here (issue #27): session.branch with the count the gateway keeps (its user and
assistant rows with text, read from its own history, up to the end of the chosen turn), the
branch listed and shown under its own key; a gateway's limits said in the chat."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop.core.chats.router import BRANCH_NOT_KEPT, BRANCH_NOT_SERVED
from desktop.core.errors import RpcError
from desktop.core.models import Role
from tests.core.controller_rig import Rig, one_chat, rig, settle

HISTORY = [
    {"role": "user", "text": "first question"},
    # Said before a tool call: a row Hermes counts, folded into the reply's bubble here.
    {"role": "assistant", "text": "Let me look."},
    {"role": "tool", "name": "terminal", "context": "ls"},
    {"role": "assistant", "text": "first answer"},
    {"role": "user", "text": "second question"},
    {"role": "assistant", "text": "second answer"},
]


def _serve(r: Rig, answer: Any) -> list[dict[str, Any]]:
    """The gateway answers session.branch with `answer(params)`; the calls made are returned."""
    asked: list[dict[str, Any]] = []
    handle = r.gw.handle

    def handler(method: str, params: dict[str, Any]) -> Any:
        if method in ("session.activate", "session.resume") and params.get("session_id") in (
            "r1",
            "s1",
        ):
            return {"session_id": "r1", "messages": HISTORY, "running": False}
        if method == "session.history" and params.get("session_id") == "r1":
            return {"session_id": "r1", "messages": HISTORY}
        if method == "session.branch":
            asked.append(dict(params))
            return answer(params)
        return handle(method, params)

    r.net.handler = handler
    return asked


async def _opened(r: Rig) -> None:
    r.gw.runtime_of["s1"] = "r1"
    r.ctl.open_session("s1")
    await r.online()
    await settle(lambda: len(r.ctl.open_session("s1")) == 4, "the chat shown")


def _hermes_022(params: dict[str, Any]) -> dict[str, Any]:
    """As 0.22 branches: the first `count` user and assistant rows with text."""
    visible = [m for m in HISTORY if m["role"] in ("user", "assistant") and m["text"]]
    rows = visible[: params.get("count") or len(visible)]
    return {
        "session_id": "r7",
        "stored_session_id": "s7",
        "title": "Chat #2",
        "parent": "s1",
        "message_count": len(rows),
        "messages": rows,
        "info": {"title": "Chat #2"},
    }


def _texts(r: Rig, key: str) -> list[tuple[Role, str]]:
    return [(m.role, m.text) for m in r.ctl.open_session(key)]


async def test_branch_from_a_message_copies_the_chat_up_to_it_into_a_new_chat(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        asked = _serve(r, _hermes_022)
        await _opened(r)
        first_answer = r.ctl.open_session("s1")[1]
        temp = r.ctl.branch_session("s1", first_answer.id)
        assert temp is not None
        assert any(s.key == temp for s in r.ctl.sessions()), "listed at once"
        await settle(lambda: ("on_session_key_changed", (temp, "s7")) in r.seen.calls, "made")
        # Three rows with text end that turn ("Let me look." too): counting bubbles says two
        # and the branch would end on "Let me look.", without the answer it was made from.
        assert asked == [{"session_id": "r1", "count": 3}], "counted on the gateway's rows"
        assert _texts(r, "s7") == [(Role.USER, "first question"), (Role.ASSISTANT, "first answer")]
        shown = [args for args in r.seen.of("on_session_messages") if args[0] == "s7"]
        assert shown and [m.text for m in shown[-1][1]] == ["first question", "first answer"]
        assert any(s.key == "s7" for s in r.ctl.sessions())
        assert _texts(r, "s1")[-1] == (Role.ASSISTANT, "second answer"), "the chat itself stays"
        # From its last message: everything, as the gateway counts it.
        last = r.ctl.open_session("s1")[-1]
        r.ctl.branch_session("s1", last.id)
        await settle(lambda: len(asked) == 2, "asked again")
        assert asked[-1] == {"session_id": "r1"}
        assert r.ctl.branch_available() == (True, ""), "still offered where it branches"


async def test_a_gateway_without_branches_or_without_a_stored_id_is_said_in_the_new_chat(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        refusal = RpcError(-32601, "method not found", method="session.branch")
        _serve(r, lambda _params: refusal)
        await _opened(r)
        temp = r.ctl.branch_session("s1", r.ctl.open_session("s1")[1].id)
        assert temp is not None

        def told(key: str, words: str) -> bool:
            return any(args[0] == key and words in str(args[1]) for args in r.seen.of("on_notice"))

        await settle(lambda: told(temp, "Not branched: this gateway cannot branch a chat"), "said")
        # Learned once: Branch from here is greyed with the reason from now on.
        assert r.ctl.branch_available() == (False, BRANCH_NOT_SERVED)
        # Hermes 0.19: the branch is made but its stored id is not said (it cannot be kept).
        _serve(r, lambda _params: {"session_id": "r8", "title": "Chat #2", "parent": "s1"})
        again = r.ctl.branch_session("s1", r.ctl.open_session("s1")[1].id)
        assert again is not None
        await settle(lambda: told(again, "without saying its stored id"), "said")
        assert r.ctl.branch_available() == (False, BRANCH_NOT_KEPT)
