"""The context meter across a gateway restart, against real Hermes 0.19.0, 0.20.1 and 0.22.2 with
a scripted provider (#26 item 5: context you can trust).

A restarted gateway resumes the chat with a fresh agent: no line has a context figure for it
until a reply runs (0.19 and 0.22 send a zero usage without `context_*` in the snapshot; 0.20.1's
`session.usage` has none). The meter must then say so (USAGE_LATER), or keep the last figure the
chat had; never a made-up 0 %. The next reply brings the figure back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.core.profile.agent.background_work import USAGE_LATER
from tests.core.test_hermes_agent import ALL_LINES, agent
from tests.support.hermes_env import HermesDist

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.mark.parametrize("dist", ALL_LINES)
async def test_the_meter_after_a_gateway_restart_says_it_waits_then_shows_the_next_figure(
    tmp_path: Path, dist: HermesDist
) -> None:
    async with agent(tmp_path, dist) as a:
        key = await a.start_chat("hello there")
        a.ctl.open_session(key)  # shown, as the window does: its usage is asked after snapshots
        conv = a.conv(key)

        def info():  # type: ignore[no-untyped-def]
            return a.ctl.session_info(key)

        await a.until(lambda: not conv.running and bool(a.replies(key)), "first reply", 120)
        await a.until(lambda: info().context_percent is not None, "context known", 60)
        before = info().context_percent
        assert before > 0 and info().context_note == ""

        await a.restart_gateway()
        # Asked again after the resume: no figure on the fresh agent. Shown: why there is none,
        # or the figure the chat had (0.20.1's snapshot carries no usage: what was known stays).
        await a.until(
            lambda: info().context_note == USAGE_LATER or info().context_percent == before,
            "the meter after the resume",
            60,
        )
        assert info().context_percent in (None, before), "a figure no gateway reported"
        # The client forgets what it knew (as after an app restart): only the gateway can say.
        conv.usage = {}
        await a.cut()
        await a.restore()
        await a.until(lambda: info().context_note == USAGE_LATER, "no figure yet, said", 60)
        assert info().context_percent is None, "a 0 % (or any figure) the gateway never gave"

        a.fake.reply = "Hello again."
        a.ctl.send(key, "and now?", ())
        await a.until(
            lambda: not conv.running and "Hello again." in a.replies(key), "second reply", 120
        )
        await a.until(lambda: info().context_percent is not None, "the figure back", 60)
        assert info().context_percent > 0 and info().context_note == ""
