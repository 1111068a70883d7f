"""Compress against real Hermes 0.19.0, 0.20.1 and 0.22.2 (`session.compress`): the chat shows
that the gateway compacts meanwhile, says what it did, and the context meter takes the figure
after; asked while a reply runs, it says why it did not."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.core.test_hermes_agent import ALL_LINES, Agent, agent
from tests.support.hermes_env import HermesDist

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(300)]


def notices(a: Agent, key: str) -> list[str]:
    return [text for k, text in a.seen.of("on_notice") if k == key]


def activities(a: Agent, key: str) -> list[str]:
    return [info.activity for k, info in a.seen.of("on_session_info") if k == key]


@pytest.mark.parametrize("dist", ALL_LINES)
async def test_compress_shows_compacting_then_the_outcome(tmp_path: Path, dist: HermesDist) -> None:
    async with agent(tmp_path, dist) as a:
        a.fake.script = [{"content": "First answer, fairly long. " * 20}]
        key = await a.start_chat("tell me something")
        await a.completed(key, "first reply")
        a.fake.script = [{"content": "Second answer, also long. " * 20}]
        a.ctl.send(key, "and more", ())
        await a.until(lambda: len(a.replies(key)) == 2 and not a.conv(key).running, "second")
        a.fake.side_reply = "A short summary of the conversation."

        seen = len(a.seen.of("on_session_info"))
        a.ctl.compress(key, "the answers")
        await a.until(
            lambda: any(
                t.startswith(("Compressed", "Compression", "Not compressed", "This"))
                for t in notices(a, key)
            ),
            "an outcome",
            120,
        )
        said = notices(a, key)
        print("\n", dist.version, said, activities(a, key)[seen:])
        assert any(t.startswith(("Compressed", "Compression did not")) for t in said), said
        assert any(activities(a, key)[seen:]), "a visible compacting state meanwhile"
        await a.until(lambda: a.conv(key).session_info().activity == "", "then ready", 10)
        assert a.conv(key).session_info().context_percent is not None

        gate = threading.Event()
        a.fake.script = [{"gate": gate, "content": "Third."}]
        a.ctl.send(key, "third", ())
        await a.until(lambda: a.conv(key).running, "the turn runs")
        before = len(notices(a, key))
        a.ctl.compress(key)
        await a.until(lambda: len(notices(a, key)) > before, "refused", 60)
        gate.set()
        print(dist.version, notices(a, key)[before:])
        assert "a reply is running" in notices(a, key)[before], notices(a, key)[before:]
        await a.until(lambda: not a.conv(key).running, "third completed")
