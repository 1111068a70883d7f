"""Steer a running turn on real Hermes 0.19.0, 0.20.1 and 0.22.2 (`session.steer`), driving the
profile controller over the fault proxy with a scripted provider.

The turn's first provider answer (a `terminal` tool call) is held on a gate; while it waits the
user steers. Hermes puts the text on the next tool result: the provider's follow-up request must
carry it, and it must not come back as a prompt of its own. (The embedded gateway, which has no
`session.steer`: tests/core/test_embedded_steer.py.)
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from desktop.core.models import Role
from tests.core.test_hermes_agent import ALL_LINES, agent
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.hermes_env import HermesDist

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(240)]

STEER = "Answer in French please"


def steered_into_the_turn(fake: FakeOpenAIServer, text: str) -> bool:
    """The turn's follow-up request (the one carrying the tool result) holds `text`: on the
    tool result (0.19, 0.20.1) or as an out-of-band user message beside it (0.22)."""
    for request in fake.requests:
        messages = request.get("messages") or []
        if any(m.get("role") == "tool" for m in messages):
            return any(text in str(m.get("content")) for m in messages)
    return False


@pytest.mark.parametrize("dist", ALL_LINES)
async def test_a_steer_reaches_the_running_turn_and_is_not_sent_again(
    tmp_path: Path, dist: HermesDist
) -> None:
    async with agent(tmp_path, dist) as a:
        gate = threading.Event()
        a.fake.script = [
            {"tool_calls": [("terminal", {"command": "echo steady"})], "gate": gate},
            {"content": "Fini."},
        ]
        key = await a.start_chat("say something")
        await a.until(lambda: a.conv(key).running and bool(a.fake.requests), "turn running")
        assert a.ctl.steer_available() == (True, "")
        a.ctl.steer(key, STEER)
        await a.until(
            lambda: any("Steered the running reply" in n[1] for n in a.seen.of("on_notice")),
            "steer taken",
        )
        gate.set()
        await a.completed(key, "turn completed")
        assert steered_into_the_turn(a.fake, STEER)  # the model read it mid-turn
        users = [m.text for m in a.conv(key).messages if m.role is Role.USER]
        assert users == ["say something"]  # no second prompt of it
        assert a.ctl._outbox.entries("p") == []


@pytest.mark.parametrize("dist", ALL_LINES)
async def test_the_busy_default_is_read_from_and_kept_on_the_gateway(
    tmp_path: Path, dist: HermesDist
) -> None:
    async with agent(tmp_path, dist) as a:
        await a.until(lambda: a.ctl.busy_default() is not None, "the gateway's busy default")
        first = a.ctl.busy_default()
        other = "steer" if first != "steer" else "queue"
        assert await a.ctl.set_busy_default(other) is True
        # Read again after a reconnect: what the gateway keeps, not what was set here.
        a.ctl._busy.value = None
        await a.cut()
        await a.restore()
        await a.until(lambda: a.ctl.busy_default() is not None, "read again")
        assert a.ctl.busy_default() == other
