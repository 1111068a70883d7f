"""Against the real embedded gateway child: launch, chat, crash the child, reconnect, resume."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop.common.clock import AsyncioClock
from desktop.core.disk.store import Store
from desktop.core.link.epochs import MemoryEpochStore
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.models import ConnectionState, Role
from desktop.core.profile.assembly import SharedParts, assemble_profile, gateway_clients
from tests.support.embedded_stack import embedded_launcher, online_embedded
from tests.support.waiting import wait_notified

pytestmark = pytest.mark.slow


async def test_embedded_gateway_crash_is_survived_by_launcher_and_router(tmp_path: Path) -> None:
    launcher = embedded_launcher(tmp_path)
    # The 1 s floor of the backoff: the restart happens on the first retry.
    async with online_embedded(tmp_path, launcher, random=lambda: 0.0) as (sup, router):
        caps = sup.dialect
        assert caps is not None and caps.event_replay and caps.heartbeat
        stored = await router.create(title="crash test")
        conv = router.conversation(stored)
        assert conv is not None
        await sup.call("prompt.submit", {"session_id": router.runtime_id(stored), "text": "hello"})
        await wait_notified(
            lambda: any(
                m.role is Role.ASSISTANT and not m.streaming and m.text for m in conv.messages
            ),
            [conv.add_listener],
            "first reply",
        )
        reply = [m.text for m in conv.messages if m.role is Role.ASSISTANT]
        assert len(reply) == 1 and "hello" in reply[0]

        first_pid, first_epoch = launcher.pid, sup.epoch
        assert first_pid is not None
        os.kill(first_pid, signal.SIGKILL)  # the gateway child crashes
        await wait_notified(
            lambda: (
                sup.epoch > first_epoch
                and sup.status.state is ConnectionState.ONLINE
                and router.synced_epoch == sup.epoch
            ),
            [sup.add_status_listener, router.on_synced],
            "back online on a restarted child",
        )
        assert launcher.starts == 2 and launcher.pid != first_pid
        session = router.session(stored)
        assert session is not None
        if not session.gone:
            # The restarted gateway resumed the stored session with its history intact.
            assert [m.text for m in conv.messages if m.role is Role.ASSISTANT] == reply
    assert not launcher.running


class Seen:
    """A controller listener: records each call and wakes the waiters."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self._wakers: list[Callable[..., None]] = []

    def __getattr__(self, name: str) -> Callable[..., None]:
        if not name.startswith("on_"):
            raise AttributeError(name)

        def record(*args: Any) -> None:
            self.calls.append((name, args))
            for waker in list(self._wakers):
                waker()

        return record

    def of(self, name: str) -> list[tuple[Any, ...]]:
        return [args for n, args in self.calls if n == name]

    def subscribe(self, waker: Callable[..., None]) -> Callable[[], None]:
        self._wakers.append(waker)
        return lambda: self._wakers.remove(waker)


async def test_each_reconnect_sends_an_open_chat_to_the_window_once_with_every_turn(
    tmp_path: Path,
) -> None:
    """The app's embedded profile, assembled as the app does, over the real gateway child."""
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

    def shown(key: str) -> list[str]:
        conv = p.router.conversation(key)
        return [m.text for m in conv.messages if not m.streaming] if conv is not None else []

    def lists(key: str) -> int:
        return sum(k == key for k, _ in seen.of("on_session_messages"))

    try:
        p.controller.start()
        await until(p.port.is_online, "online")
        p.controller.send(p.controller.create_session(), "hello", ())
        await until(lambda: bool(seen.of("on_session_key_changed")), "the chat created")
        [(_temp, key)] = seen.of("on_session_key_changed")
        await until(lambda: len(shown(key)) == 2, "the first reply")
        p.controller.send(key, "again", ())
        await until(lambda: len(shown(key)) == 4, "the second reply")
        turns = shown(key)

        # A reconnect to the same gateway (its events are replayed), then one to a restarted
        # child (a new replay epoch: the chat is rebuilt from its snapshot and history).
        for how in ("reconnect", "restart"):
            before, epoch = lists(key), p.supervisor.epoch
            if how == "reconnect":
                p.controller.reconnect_now()
            else:
                assert launcher.pid is not None
                os.kill(launcher.pid, signal.SIGKILL)
            await until(lambda e=epoch: p.supervisor.epoch > e and p.port.is_online(), how)
            await shared.outbox.idle()
            assert lists(key) - before == 1, f"{how}: the chat's list sent more than once"
            assert shown(key) == turns, f"{how}: an earlier turn is missing"
    finally:
        await p.controller.close()
        await shared.aclose()
