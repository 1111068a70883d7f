"""The agent's questions on Hermes 0.22.2 (and 0.21.5), asked as server->client requests.

Each test drives the profile controller over the fault proxy to a real `hermes serve`, with
`approvals: {mode: manual}` and a scripted provider: a `terminal` call Hermes flags for
approval, the `clarify` tool with several questions, a tool that fails. Asked while connected
and while the client is cut off; withdrawn by an interrupt. Every reply completes once.
The scenario functions also record the fault-matrix rows (tests/reliability/test_agent.py).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from desktop.core.models import ApprovalRequest, Role
from tests.core.test_hermes_agent import Agent, agent
from tests.support.hermes_env import HERMES_0215, HERMES_022, HermesDist

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(300)]

DISTS = [pytest.param(HERMES_022, id="0.22.2"), pytest.param(HERMES_0215, id="0.21.5")]
MANUAL = "approvals:\n  mode: manual\n"
DONE = "Deleted it."


def victim(a: Agent) -> Path:
    path = a.scratch.parent / "victim"
    path.mkdir(exist_ok=True)
    (path / "keep.txt").write_text("x\n")
    return path


def delete_turn(path: Path, gate: threading.Event | None = None) -> list[dict[str, Any]]:
    # 0.22 flags `rm -rf <absolute path>` ("delete in root path").
    first: dict[str, Any] = {"tool_calls": [("terminal", {"command": f"rm -rf {path}"})]}
    if gate is not None:
        first["gate"] = gate
    return [first, {"content": DONE}]


QUESTIONS = [
    {"question": "Which env?", "choices": ["staging", "prod"]},
    {"question": "Which regions?", "choices": ["eu", "us", "ap"], "multi_select": True},
]


def clarify_turn(gate: threading.Event | None = None) -> list[dict[str, Any]]:
    first: dict[str, Any] = {"tool_calls": [("clarify", {"questions": QUESTIONS})]}
    if gate is not None:
        first["gate"] = gate
    return [first, {"content": "Deploying."}]


def sent_methods(a: Agent) -> list[str]:
    """Wrap the supervisor's call to record every method the app sends from now on."""
    methods: list[str] = []
    call = a.sup.call

    async def recording(method: str, params: Any = None, **kw: Any) -> Any:
        methods.append(method)
        return await call(method, params, **kw)

    a.sup.call = recording  # type: ignore[method-assign]
    return methods


def tool_rows(a: Agent, key: str) -> list[tuple[str, bool, bool]]:
    return [
        (t.name, t.done, t.error)
        for m in a.conv(key).messages
        if m.role is Role.ASSISTANT
        for t in m.tools
    ]


async def offline_request(a: Agent, turn: list[dict[str, Any]], gate: threading.Event) -> str:
    """Start a turn, cut the link before the provider answers, let the agent ask with the
    client cut off, and reconnect once the gateway blocks on the request."""
    a.fake.script = turn
    key = await a.start_chat("go on")
    await asyncio.to_thread(a.fake.wait_until, lambda f: bool(f.script) and len(f.script) < 2)
    await a.cut()
    gate.set()
    await a.gateway_waits(key, "waiting")
    await a.restore()
    return key


async def approval_connected(tmp: Path, dist: HermesDist) -> dict[str, Any]:
    async with agent(tmp, dist, config_extra=MANUAL) as a:
        sent = sent_methods(a)
        path = victim(a)
        a.fake.script = delete_turn(path)
        key = await a.start_chat("delete the victim folder")
        card = await a.card("approval", "approval card")
        assert path.exists()  # nothing ran before the answer
        a.ctl.respond(key, card.request_id, "once")
        await a.completed(key, "turn completed")
        return {
            "cards": [r.kind for r in a.seen.requests()],
            "card": card,
            "received": sent.count("approval.received"),
            "replies": a.replies(key),
            "ran": not path.exists(),
            "tools": tool_rows(a, key),
            "pending": dict(a.conv(key).pending),
            "asks": a.sup.dialect.server_requests if a.sup.dialect else frozenset(),
        }


async def approval_offline(tmp: Path, dist: HermesDist) -> dict[str, Any]:
    async with agent(tmp, dist, config_extra=MANUAL) as a:
        gate = threading.Event()
        path = victim(a)
        key = await offline_request(a, delete_turn(path, gate), gate)
        reattached = time.monotonic()
        card = await a.card("approval", "approval card after the reconnect")
        shown_after = time.monotonic() - reattached
        a.ctl.respond(key, card.request_id, "once")
        await a.completed(key, "turn completed")
        return {
            "cards": [r.kind for r in a.seen.requests()],
            "card": card,
            "shown_after": shown_after,
            "replies": a.replies(key),
            "ran": not path.exists(),
        }


async def clarify_offline(tmp: Path, dist: HermesDist) -> dict[str, Any]:
    async with agent(tmp, dist) as a:
        gate = threading.Event()
        key = await offline_request(a, clarify_turn(gate), gate)
        card = await a.card("clarify", "clarify card after the reconnect")
        qids = [q.qid for q in card.questions]
        a.ctl.respond(key, card.request_id, {qids[0]: "prod", qids[1]: json.dumps(["eu", "ap"])})
        await a.completed(key, "turn completed")
        # What the agent got back from the clarify tool (the last request that carries it;
        # side calls such as the title come without).
        tool = next(
            m
            for req in reversed(a.fake.requests)
            for m in req.get("messages") or []
            if m.get("role") == "tool" and "Which env?" in str(m.get("content"))
        )
        return {
            "cards": [r.kind for r in a.seen.requests()],
            "card": card,
            "replies": a.replies(key),
            "result": json.loads(tool["content"]),
        }


@pytest.mark.parametrize("dist", DISTS)
async def test_approval_while_connected_one_card_received_once_and_the_command_runs(
    tmp_path: Path, dist: HermesDist
) -> None:
    got = await approval_connected(tmp_path, dist)
    card: ApprovalRequest = got["card"]
    assert got["cards"] == ["approval"]  # one card, no stand-in notice
    assert card.title.startswith("rm -rf") and card.reply_to.startswith("srq-")
    assert got["received"] == 1  # approval.received once, when the card was shown
    assert got["replies"] == [DONE] and got["ran"]
    assert got["tools"] == [("terminal", True, False)] and got["pending"] == {}
    assert {"approval", "clarify", "sudo", "secret"} <= got["asks"]  # client.capabilities


@pytest.mark.parametrize("dist", DISTS)
async def test_approval_asked_while_offline_one_card_after_reconnect(
    tmp_path: Path, dist: HermesDist
) -> None:
    got = await approval_offline(tmp_path, dist)
    assert got["cards"] == ["approval"]  # not also "waiting for an answer this app cannot show"
    assert got["card"].title.startswith("rm -rf")
    assert got["replies"] == [DONE] and got["ran"]  # the old srq id answered from a new socket


@pytest.mark.parametrize("dist", DISTS)
async def test_clarify_with_two_questions_asked_offline_answered(
    tmp_path: Path, dist: HermesDist
) -> None:
    got = await clarify_offline(tmp_path, dist)
    card: ApprovalRequest = got["card"]
    assert got["cards"] == ["clarify"]
    assert [(q.text, q.multi_select) for q in card.questions] == [
        ("Which env?", False),
        ("Which regions?", True),
    ]
    assert card.questions[0].choices[0] == "staging (Recommended)"
    answers = [r.get("user_response") for r in got["result"]["responses"]]
    assert answers[0] == "prod" and answers[1] in (["eu", "ap"], json.dumps(["eu", "ap"]))
    assert got["replies"] == ["Deploying."]


@pytest.mark.parametrize("dist", DISTS)
async def test_interrupt_withdraws_the_card_and_a_failing_tool_shows_failed(
    tmp_path: Path, dist: HermesDist
) -> None:
    async with agent(tmp_path, dist, config_extra=MANUAL) as a:
        path = victim(a)
        a.fake.script = delete_turn(path)
        key = await a.start_chat("delete the victim folder")
        card = await a.card("approval", "approval card")
        conv = a.conv(key)
        # What the turn looked like when the card went: request.cancel comes before the
        # tool's (blocked) result and the turn's end.
        at_close: list[tuple[bool, list[tuple[str, bool, bool]]]] = []

        def on_change() -> None:
            if a.seen.of("on_approval_closed") and not at_close:
                at_close.append((conv.running, tool_rows(a, key)))

        a.seen.subscribe(on_change)
        a.ctl.interrupt(key)
        await a.until(lambda: not conv.running, "turn interrupted", 60)
        assert [rid for _, rid in a.seen.of("on_approval_closed")] == [card.request_id]
        assert at_close == [(True, [("terminal", False, False)])]
        assert path.exists() and conv.pending == {}
        # Next turn: a tool whose result carries an error is shown failed.
        a.fake.script = [
            {"tool_calls": [("read_file", {"path": "/nonexistent/zzz.txt"})]},
            {"content": "It is not there."},
        ]
        a.ctl.send(key, "read it", ())
        await a.until(lambda: a.replies(key)[-1:] == ["It is not there."], "second turn")
        await a.until(lambda: not conv.running, "second turn over")
        assert tool_rows(a, key)[-1] == ("read_file", True, True)
