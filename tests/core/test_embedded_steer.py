"""Steer against the real embedded gateway child, which does not serve `session.steer` and says
so in its ready frame: Steer is hidden with its reason from the start, and a steer asked all the
same (a queued row's, say) goes as the next message, once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from desktop.common.clock import AsyncioClock
from desktop.core.disk.store import Store
from desktop.core.link.epochs import MemoryEpochStore
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.models import Role
from desktop.core.profile.agent.steering import NOT_SERVED
from desktop.core.profile.assembly import SharedParts, assemble_profile, gateway_clients
from tests.core.test_embedded_real import Seen
from tests.support.embedded_stack import embedded_launcher
from tests.support.waiting import wait_notified

pytestmark = pytest.mark.slow


async def test_a_steer_the_embedded_gateway_lacks_goes_as_the_next_message_once(
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

    def users(key: str) -> list[str]:
        conv = p.router.conversation(key)
        return [m.text for m in conv.messages if m.role is Role.USER] if conv else []

    def replies(key: str) -> int:
        conv = p.router.conversation(key)
        return sum(m.role is Role.ASSISTANT and not m.streaming for m in conv.messages)

    try:
        p.controller.start()
        await until(p.port.is_online, "online")
        p.controller.send(p.controller.create_session(), "hello", ())
        await until(lambda: bool(seen.of("on_session_key_changed")), "the chat created")
        [(_temp, key)] = seen.of("on_session_key_changed")
        await until(lambda: replies(key) == 1, "the first reply")
        assert p.controller.steer_available() == (False, NOT_SERVED)  # from the ready frame
        p.controller.steer(key, "steer me")
        await until(lambda: replies(key) == 2, "the steer answered as a message")
        await shared.outbox.idle()
        assert users(key) == ["hello", "steer me"]
        assert (key, NOT_SERVED) in seen.of("on_notice")
        assert p.controller.steer_available() == (False, NOT_SERVED)
    finally:
        await p.controller.close()
        await shared.aclose()
