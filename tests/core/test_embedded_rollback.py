"""Checkpoints against the real embedded gateway child, which has no tools and no rollback.*:
the chat's checkpoint state says in words that nothing can be restored from here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from desktop.common.clock import AsyncioClock
from desktop.core.disk.store import Store
from desktop.core.link.epochs import MemoryEpochStore
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.profile.agent.rollback import NO_CHECKPOINTS
from desktop.core.profile.assembly import SharedParts, assemble_profile, gateway_clients
from tests.core.test_embedded_real import Seen
from tests.support.embedded_stack import embedded_launcher
from tests.support.waiting import wait_notified

pytestmark = pytest.mark.slow


async def test_the_embedded_gateway_has_no_checkpoints_and_the_state_says_so(
    tmp_path: Path,
) -> None:
    launcher = embedded_launcher(tmp_path)
    profile = Profile(id="embedded", name="This computer", kind=ProfileKind.EMBEDDED)
    clock = AsyncioClock()
    store = Store(tmp_path / "hermes-qt.sqlite3")
    shared = SharedParts.over(store, tmp_path, clock=clock, epochs=MemoryEpochStore())
    p = assemble_profile(
        profile, shared, clients=gateway_clients(profile, clock), launcher=launcher
    )
    seen = Seen()
    p.controller.subscribe(seen)
    subs = [p.supervisor.add_status_listener, p.router.on_synced, seen.subscribe]

    async def until(predicate: Callable[[], bool], what: str) -> None:
        await wait_notified(predicate, subs, what, 60)

    try:
        p.controller.start()
        await until(p.port.is_online, "online")
        p.controller.send(p.controller.create_session(), "hello", ())
        await until(lambda: bool(seen.of("on_session_key_changed")), "the chat created")
        [(_temp, key)] = seen.of("on_session_key_changed")
        p.controller.load_rollback(key)
        await until(lambda: p.controller.rollback_state(key).loaded, "asked")
        state = p.controller.rollback_state(key)
        assert not state.available and state.reason == NO_CHECKPOINTS
    finally:
        await p.controller.close()
        await shared.aclose()
        await launcher.close()
