"""A wake from sleep, as logind announces it on the system bus, reaches the app (and only that)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from desktop.app.sleep_watch import SleepWatch
from tests.app.test_single_instance import running_app
from tests.support.fake_logind import FakeLogind
from tests.support.fake_notifications import session_bus


async def until(predicate: Callable[[], bool], what: str) -> None:
    """The fake logind answers from its own thread: re-check each loop turn, bounded."""
    async with asyncio.timeout(10):
        while not predicate():
            await asyncio.sleep(0.01)


async def test_a_wake_is_reported_and_going_to_sleep_is_not() -> None:
    woke: list[bool] = []
    with session_bus() as address, FakeLogind(address) as logind:
        watch = SleepWatch(lambda: woke.append(True), bus=address)
        assert await watch.start()
        logind.announce_sleep(True)
        logind.announce_sleep(False)
        await until(lambda: bool(woke), "the wake reported")
        logind.announce_sleep(False)
        await until(lambda: len(woke) == 2, "the second wake reported")
        await watch.aclose()
    assert woke == [True, True]  # the announcement of sleep itself was not a wake


async def test_without_a_system_bus_nothing_is_watched_and_nothing_breaks() -> None:
    watch = SleepWatch(lambda: None, bus="unix:path=/nonexistent")
    assert not await watch.start()
    await watch.aclose()


@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_the_app_hears_a_wake_from_logind(tmp_path: Path) -> None:
    root = tmp_path / "app"
    app_log = root / "state" / "logs" / "hermes-qt.log"
    # The private bus stands in for the system bus (jeepney reads this as Qt and sd-bus do).
    with (
        session_bus() as address,
        FakeLogind(address) as logind,
        running_app(root, DBUS_SYSTEM_BUS_ADDRESS=address),
    ):
        await until(lambda: "following logind's sleep notices" in app_log.read_text(), "watch")
        logind.announce_sleep(False)
        await until(lambda: "the computer woke up" in app_log.read_text(), "the wake heard")
