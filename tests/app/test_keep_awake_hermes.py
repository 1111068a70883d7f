"""Against real Hermes 0.19.0, 0.20.1 and 0.22.2: the computer is kept awake exactly while a turn
runs, and let go when it completes, is stopped, fails, or the connection drops (and taken again
once if the turn still runs after the reconnect)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from desktop.app.keep_awake import KeepAwake
from desktop.common.clock import ManualClock
from tests.app.test_keep_awake import FakeInhibitor
from tests.core.test_hermes_agent import ALL_LINES, Agent, agent
from tests.support.hermes_env import HermesDist

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(300)]


async def held_during(
    a: Agent, inhibitor: FakeInhibitor, keep: KeepAwake, text: str
) -> tuple[str, threading.Event]:
    """Start a chat whose reply waits on `gate`; returns its key once the hold is taken."""
    gate = threading.Event()
    a.fake.script = [{"gate": gate, "content": "Done."}]
    key = await new_chat(a, text)
    await a.until(lambda: a.conv(key).running, "the turn runs")
    await a.until(lambda: keep.held, "the computer is kept awake")
    assert inhibitor.held == 1
    return key, gate


async def new_chat(a: Agent, text: str) -> str:
    """A new chat with `text` sent, as the window does it; returns its durable key."""
    before = len(a.seen.of("on_session_key_changed"))
    a.ctl.send(a.ctl.create_session(), text, ())
    await a.until(lambda: len(a.seen.of("on_session_key_changed")) > before, "created")
    return str(a.seen.of("on_session_key_changed")[-1][1])


@pytest.mark.parametrize("dist", ALL_LINES)
async def test_kept_awake_only_while_a_real_turn_runs(tmp_path: Path, dist: HermesDist) -> None:
    async with agent(tmp_path, dist) as a:
        inhibitor = FakeInhibitor()
        keep = KeepAwake(inhibitor, ManualClock())
        watch = keep.listener(a.ctl.profile_id)
        a.ctl.subscribe(watch)
        watch.on_status(a.ctl.status())
        try:
            # 1. It completes.
            key, gate = await held_during(a, inhibitor, keep, "first")
            gate.set()
            await a.completed(key, "the reply completed")
            assert not keep.held and inhibitor.held == 0, "completed"

            # 2. The user stops it.
            key, gate = await held_during(a, inhibitor, keep, "second")
            a.ctl.interrupt(key)
            gate.set()
            await a.until(lambda: not a.conv(key).running, "the turn stopped")
            assert not keep.held and inhibitor.held == 0, "stopped"

            # 3. The connection drops mid-turn: let go; back online with the turn still
            # running: held again, once; then it completes.
            key, gate = await held_during(a, inhibitor, keep, "third")
            await a.cut()
            assert not keep.held and inhibitor.held == 0, "disconnected"
            await a.restore()
            await a.until(lambda: keep.held, "kept awake again after the reconnect")
            assert inhibitor.held == 1
            gate.set()
            await a.completed(key, "the reply completed after the reconnect")
            assert not keep.held and inhibitor.held == 0, "completed after a reconnect"

            # 4. The provider fails the turn.
            taken = len(inhibitor.holds)
            a.fake.status = 401
            key = await new_chat(a, "fourth")
            await a.until(lambda: len(inhibitor.holds) > taken, "kept awake for the turn")
            await a.until(lambda: not a.conv(key).running, "the turn failed")
            assert not keep.held and inhibitor.held == 0, "failed"
        finally:
            a.fake.status = None
            await keep.aclose()
