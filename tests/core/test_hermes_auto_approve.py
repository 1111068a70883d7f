"""Auto-approve in one chat against real Hermes 0.19.0, 0.20.1 and 0.22.2: the toggle is Hermes'
own per-session bypass (`config.set {key: "yolo", scope: "session"}`), its state is what the
gateway reads back (`session.info` `yolo`), it survives a reconnect, and while it is on a
command Hermes would ask about runs without a card."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.core.test_hermes_agent import ALL_LINES, DONE, agent, chmod_turn, mode
from tests.support.hermes_env import HermesDist

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.mark.parametrize("dist", ALL_LINES)
async def test_auto_approve_in_this_chat_is_hermes_own_and_read_back(
    tmp_path: Path, dist: HermesDist
) -> None:
    async with agent(tmp_path, dist) as a:
        a.fake.script = [{"content": "Hello."}]
        key = await a.start_chat("hi")
        await a.completed(key, "first reply")
        assert not a.conv(key).session_info().auto_approve, "off unless asked"

        a.ctl.set_auto_approve(key, True)
        await a.until(lambda: a.conv(key).session_info().auto_approve is True, "on")
        # What the gateway itself said (its session.info), not only the client's guess.
        assert a.conv(key).info.get("yolo") is True

        a.fake.script = chmod_turn(a.scratch)
        a.ctl.send(key, "make the scratch file shared", ())
        await a.until(lambda: mode(a.scratch) == 0o777, "the command ran unasked", 120)
        await a.until(lambda: not a.conv(key).running, "the turn ended", 120)
        assert a.seen.requests() == [], "no approval card while auto-approve is on"
        assert DONE in a.replies(key)

        await a.cut()
        await a.restore()
        assert a.conv(key).session_info().auto_approve is True, "kept across a reconnect"

        a.ctl.set_auto_approve(key, False)
        await a.until(lambda: a.conv(key).session_info().auto_approve is False, "off again")
