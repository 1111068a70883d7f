"""The sleep inhibitor is held while a turn runs and let go every way a turn or the app ends."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from desktop.app.keep_awake import DEFAULT_CAP, KeepAwake, LogindInhibitor
from desktop.common.clock import ManualClock
from desktop.core.listeners import BackendListener
from desktop.core.models import ConnectionState, ConnectionStatus
from tests.support.fake_logind import FakeLogind
from tests.support.fake_notifications import session_bus


class FakeHold:
    def __init__(self) -> None:
        self.released = False

    def release(self) -> None:
        self.released = True


class FakeInhibitor:
    """The D-Bus boundary as a list of the holds it handed out."""

    def __init__(self, *, gives: bool = True) -> None:
        self.gives = gives
        self.holds: list[FakeHold] = []
        self.gate: asyncio.Event | None = None

    async def inhibit(self) -> FakeHold | None:
        if self.gate is not None:
            await self.gate.wait()
        if not self.gives:
            return None
        self.holds.append(FakeHold())
        return self.holds[-1]

    @property
    def held(self) -> int:
        return sum(not h.released for h in self.holds)


def status(state: ConnectionState) -> ConnectionStatus:
    return ConnectionStatus(state, epoch=1, generation=1)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def started(keep: KeepAwake, listener: BackendListener, key: str = "s1") -> None:
    listener.on_status(status(ConnectionState.ONLINE))
    listener.on_running(key, True)
    await settle()
    assert keep.held


ENDINGS: dict[str, Callable[[KeepAwake, BackendListener], None]] = {
    "turn ended (complete, error or stop)": lambda k, w: w.on_running("s1", False),
    "reconnecting": lambda k, w: w.on_status(status(ConnectionState.RECONNECTING)),
    "connection failed": lambda k, w: w.on_status(status(ConnectionState.FAILED)),
    "profile closed": lambda k, w: w.on_status(status(ConnectionState.CLOSED)),
    "profile removed": lambda k, w: k.forget("p"),
    "setting turned off": lambda k, w: k.set_enabled(False),
}


@pytest.mark.parametrize("ending", list(ENDINGS))
async def test_the_hold_is_taken_at_the_turn_start_and_released_however_it_ends(
    ending: str,
) -> None:
    inhibitor = FakeInhibitor()
    keep = KeepAwake(inhibitor, ManualClock())
    watch = keep.listener("p")
    await started(keep, watch)
    assert inhibitor.held == 1
    ENDINGS[ending](keep, watch)
    assert not keep.held and inhibitor.held == 0, ending
    await keep.aclose()


async def test_quitting_the_app_mid_turn_releases_it() -> None:
    inhibitor = FakeInhibitor()
    keep = KeepAwake(inhibitor, ManualClock())
    await started(keep, keep.listener("p"))
    await keep.aclose()
    assert inhibitor.held == 0


async def test_one_hold_for_many_turns_until_the_last_one_ends() -> None:
    inhibitor = FakeInhibitor()
    keep = KeepAwake(inhibitor, ManualClock())
    first, second = keep.listener("p"), keep.listener("q")
    await started(keep, first, "s1")
    await started(keep, second, "s2")
    first.on_running("s3", True)
    await settle()
    assert len(inhibitor.holds) == 1
    first.on_running("s1", False)
    first.on_running("s3", False)
    assert keep.held, "a turn still runs on the other profile"
    second.on_running("s2", False)
    assert inhibitor.held == 0
    await keep.aclose()


async def test_a_turn_that_ends_while_the_hold_is_being_taken_releases_it_at_once() -> None:
    inhibitor = FakeInhibitor()
    inhibitor.gate = asyncio.Event()
    keep = KeepAwake(inhibitor, ManualClock())
    watch = keep.listener("p")
    watch.on_status(status(ConnectionState.ONLINE))
    watch.on_running("s1", True)
    await settle()
    watch.on_running("s1", False)
    inhibitor.gate.set()
    await settle()
    assert len(inhibitor.holds) == 1 and inhibitor.held == 0 and not keep.held
    await keep.aclose()


async def test_the_cap_lets_the_computer_sleep_and_the_next_turn_holds_again() -> None:
    clock = ManualClock()
    inhibitor = FakeInhibitor()
    keep = KeepAwake(inhibitor, clock)
    watch = keep.listener("p")
    await started(keep, watch)
    clock.advance(DEFAULT_CAP - 1)
    assert keep.held, "under two hours"
    clock.advance(1)
    assert not keep.held and inhibitor.held == 0
    watch.on_running("s2", True)  # the stuck turn still runs: no new hold for another one
    await settle()
    assert len(inhibitor.holds) == 1
    watch.on_running("s1", False)
    watch.on_running("s2", False)
    watch.on_running("s3", True)
    await settle()
    assert keep.held and len(inhibitor.holds) == 2
    await keep.aclose()


async def test_a_reconnect_with_the_turn_still_running_holds_again_once() -> None:
    inhibitor = FakeInhibitor()
    keep = KeepAwake(inhibitor, ManualClock())
    watch = keep.listener("p")
    await started(keep, watch)
    watch.on_status(status(ConnectionState.RECONNECTING))
    assert inhibitor.held == 0
    watch.on_status(status(ConnectionState.ONLINE))
    watch.on_status(status(ConnectionState.ONLINE))
    await settle()
    assert inhibitor.held == 1 and len(inhibitor.holds) == 2
    await keep.aclose()


async def test_turned_off_it_never_asks_and_a_temp_key_renamed_still_ends() -> None:
    inhibitor = FakeInhibitor()
    keep = KeepAwake(inhibitor, ManualClock(), enabled=False)
    watch = keep.listener("p")
    watch.on_status(status(ConnectionState.ONLINE))
    watch.on_running("local-1", True)
    await settle()
    assert inhibitor.holds == []
    keep.set_enabled(True)
    await settle()
    assert keep.held
    watch.on_session_key_changed("local-1", "s1")
    watch.on_running("s1", False)
    assert inhibitor.held == 0
    await keep.aclose()


async def until(predicate: Callable[[], bool], what: str) -> None:
    """The worker thread answers on its own time: re-check each loop turn, bounded."""
    async with asyncio.timeout(10):
        while not predicate():
            await asyncio.sleep(0.01)


async def test_logind_over_dbus_holds_a_descriptor_until_released() -> None:
    with session_bus() as address, FakeLogind(address) as logind:
        keep = KeepAwake(LogindInhibitor(bus=address), ManualClock())
        watch = keep.listener("p")
        watch.on_status(status(ConnectionState.ONLINE))
        watch.on_running("s1", True)
        await until(lambda: keep.held, "the inhibitor is taken")
        (lock,) = logind.locks
        assert (lock.what, lock.who, lock.why, lock.mode) == (
            "sleep:idle",
            "hermes-qt",
            "A reply is running",
            "block",
        )
        assert logind.held == [lock]
        watch.on_running("s1", False)
        assert lock.released, "closing the descriptor lets the computer sleep"
        await keep.aclose()


async def test_without_logind_or_refused_nothing_breaks() -> None:
    with session_bus() as address:
        assert await LogindInhibitor(bus=address).inhibit() is None, "nobody owns login1"
        with FakeLogind(address, refuse=True) as logind:
            assert await LogindInhibitor(bus=address).inhibit() is None
            assert logind.locks == []
    assert await LogindInhibitor(bus="unix:path=/nonexistent").inhibit() is None
