"""Against real Hermes 0.19.0, 0.20.1 and 0.22.2: a reply says how long its turn took (from its
message.start to its message.complete), and still does after a reconnect rebuilt the chat."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from desktop.core.models import Role
from tests.core.test_hermes_agent import ALL_LINES, agent
from tests.support.hermes_env import HermesDist

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.mark.parametrize("dist", ALL_LINES)
async def test_a_real_reply_says_how_long_its_turn_took(tmp_path: Path, dist: HermesDist) -> None:
    async with agent(tmp_path, dist) as a:
        gate = threading.Event()
        a.fake.script = [{"gate": gate, "content": "Done."}]
        began = time.time()
        key = await a.start_chat("take your time")
        await a.until(lambda: a.conv(key).running, "the turn runs")
        gate.set()
        await a.completed(key, "the reply completed")
        took = time.time() - began
        [reply] = [m for m in a.conv(key).messages if m.role is Role.ASSISTANT]
        assert reply.duration is not None and 0 < reply.duration <= took
        await a.cut()
        await a.restore()
        [again] = [m for m in a.conv(key).messages if m.role is Role.ASSISTANT]
        assert again.duration == reply.duration, "kept across a reconnect"
