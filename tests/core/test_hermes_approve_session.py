"""The approval card's "Allow this session" against real Hermes 0.19.0, 0.20.1, 0.22.2 and
0.21.5: Hermes approves that kind of command for the rest of the chat (approve_session), so the
next turn runs it without a card, while the header's auto-approve (Hermes' yolo) stays off;
another chat is still asked, and "Allow once" there asks again next turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.core.models import ApprovalRequest
from tests.core.test_hermes_agent import ALL_LINES, DONE, Agent, agent, chmod_turn, mode
from tests.support.hermes_env import HERMES_0215, HermesDist

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(300)]

LINES = [*ALL_LINES, pytest.param(HERMES_0215, id="0.21.5")]


async def new_chat(a: Agent, text: str) -> str:
    """A new chat with its first reply in; returns its durable key."""
    known = len(a.seen.of("on_session_key_changed"))
    a.fake.script = [{"content": "Hello."}]
    a.ctl.send(a.ctl.create_session(), text, ())
    await a.until(lambda: len(a.seen.of("on_session_key_changed")) > known, "created")
    key = str(a.seen.of("on_session_key_changed")[-1][1])
    await a.completed(key, "the chat's first reply")
    return key


def cards(a: Agent, key: str) -> list[ApprovalRequest]:
    return [args[1] for args in a.seen.of("on_approval_request") if args[0] == key]


async def chmod_in(a: Agent, key: str, answer: str | None) -> None:
    """One turn that runs `chmod 777` on the scratch file: it must show a card, answered with
    `answer`, or with None run without one. Returns once the reply is in and the file changed."""
    a.scratch.chmod(0o644)
    conv = a.conv(key)
    asked, replies = len(cards(a, key)), len(a.replies(key))

    def over() -> bool:
        return not conv.running and len(a.replies(key)) > replies

    def carded() -> bool:
        return len(cards(a, key)) > asked

    a.fake.script = chmod_turn(a.scratch)
    a.ctl.send(key, "make the scratch file shared", ())
    await a.until(lambda: carded() or over(), "a card or the reply", 120)
    if answer is None:
        assert not carded(), "asked again: the earlier answer did not cover this turn"
    else:
        assert carded(), "not asked: an earlier answer covered this turn"
        card = cards(a, key)[-1]
        assert card.title.startswith("chmod 777") and "session" in card.choices
        assert mode(a.scratch) == 0o644, "nothing ran before the answer"
        a.ctl.respond(key, card.request_id, answer)
        await a.until(over, "the turn's reply", 120)
    assert a.replies(key)[-1] == DONE
    assert mode(a.scratch) == 0o777, "the command ran"


@pytest.mark.parametrize("dist", LINES)
async def test_allow_this_session_covers_the_next_turn_without_auto_approve(
    tmp_path: Path, dist: HermesDist
) -> None:
    async with agent(tmp_path, dist) as a:
        key = await new_chat(a, "hi")

        await chmod_in(a, key, "session")
        await chmod_in(a, key, None)  # the same kind of command: no card, it just runs
        # ...and not because auto-approve went on: the header's flag, Hermes' own `yolo` as
        # the gateway reports it, is still off.
        assert a.conv(key).session_info().auto_approve is False
        assert a.conv(key).info.get("yolo") is False

        # Another chat is a new Hermes session: asked again; "once" there lasts one turn.
        other = await new_chat(a, "hi again")
        await chmod_in(a, other, "once")
        await chmod_in(a, other, "once")
