"""The outbox's hold: a follow-up typed while the session's reply runs waits for that reply.

A fake port follows one chat (running, turns ended) and tells the outbox of its changes, as the
session router's conversation does; the clock is a manual one. No gateway runs here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from desktop.common.clock import ManualClock
from desktop.core.delivery.outbox import HELD, TURN_START_GRACE, Outbox
from desktop.core.disk.store import Store, Wire
from desktop.core.models import DeliveryState
from tests.core.delivery.test_outbox import FakeGateway, Recorder


class FollowedChat(FakeGateway):
    """A gateway port whose session's chat is followed: a turn runs or not, turns end."""

    def __init__(self) -> None:
        super().__init__(dedup=False)
        self.running = False
        self.ended = 0
        self.listeners: list[Callable[[], None]] = []

    def turn_state(self, session_key: str) -> tuple[bool, int] | None:
        return (self.running, self.ended)

    def watch(self, session_key: str, callback: Callable[[], None]) -> Callable[[], None] | None:
        self.listeners.append(callback)
        return lambda: self.listeners.remove(callback) if callback in self.listeners else None

    def changed(self) -> None:
        for callback in list(self.listeners):
            callback()

    def turn_starts(self) -> None:
        self.running = True
        self.changed()

    def turn_ends(self) -> None:
        self.running = False
        self.ended += 1
        self.changed()

    def sent(self) -> list[str]:
        return [p["text"] for p in self.submits()]


@pytest.fixture
def store(data_dir: Path) -> Iterator[Store]:
    s = Store(data_dir / "app.db")
    yield s
    s.close()


def _outbox(store: Store, gw: FollowedChat) -> Outbox:
    return Outbox(store, lambda _profile: gw, ManualClock())


async def test_a_follow_up_while_the_reply_runs_is_held_pending_and_not_sent(
    store: Store,
) -> None:
    gw = FollowedChat()
    outbox = _outbox(store, gw)
    rec = Recorder(outbox, store)
    outbox.submit("p", "s1", "rt1", "first")
    await outbox.idle()
    gw.turn_starts()  # the first prompt's reply streams
    follow = outbox.submit("p", "s1", "rt1", "second")
    await outbox.idle()
    assert gw.sent() == ["first"]  # nothing of the follow-up went out
    entry = store.outbox_get(follow.submission_ref)
    assert entry is not None
    assert entry.state is DeliveryState.PENDING and entry.wire == Wire.NOTHING
    assert entry.error == HELD  # the line under its bubble
    assert ("second", DeliveryState.PENDING, HELD) in rec.states


async def test_the_held_follow_up_is_released_exactly_once_when_the_turn_ends(
    store: Store,
) -> None:
    gw = FollowedChat()
    outbox = _outbox(store, gw)
    rec = Recorder(outbox, store)
    outbox.submit("p", "s1", "rt1", "first")
    await outbox.idle()
    gw.turn_starts()
    outbox.submit("p", "s1", "rt1", "second")
    await outbox.idle()
    gw.changed()  # a delta: still running
    await outbox.idle()
    assert gw.sent() == ["first"]
    gw.turn_ends()
    await outbox.idle()
    assert gw.sent() == ["first", "second"]
    assert gw.submits()[1]["queued"] is True  # its own turn, should the session be busy
    assert ("second", DeliveryState.CONFIRMED, "") in rec.states
    for _ in range(3):  # later chat changes (its own turn) release nothing again
        gw.turn_starts()
        gw.turn_ends()
    await outbox.idle()
    assert gw.sent() == ["first", "second"] and outbox.entries() == []


async def test_a_held_follow_up_survives_a_restart_and_is_sent_once_the_turn_ends(
    store: Store, data_dir: Path
) -> None:
    gw = FollowedChat()
    first = _outbox(store, gw)
    first.submit("p", "s1", "rt1", "first")
    await first.idle()
    gw.turn_starts()
    first.submit("p", "s1", "rt1", "second")
    await first.idle()
    await first.aclose()  # the app quits while the reply still runs
    with Store(data_dir / "app.db") as again:
        (entry,) = again.outbox_entries()
        assert (entry.text, entry.state, entry.wire, entry.error) == (
            "second",
            DeliveryState.PENDING,
            Wire.NOTHING,
            HELD,
        )
        # Started again, the session is re-attached and its snapshot still says running.
        outbox = _outbox(again, gw)
        outbox.on_online("p")
        await outbox.idle()
        assert gw.sent() == ["first"]  # still held: nothing remembered, the chat says so
        gw.turn_ends()
        await outbox.idle()
        assert gw.sent() == ["first", "second"]
        assert outbox.entries() == []


async def test_a_lost_turn_end_releases_the_follow_up_when_the_link_comes_back(
    store: Store,
) -> None:
    gw = FollowedChat()
    outbox = _outbox(store, gw)
    outbox.submit("p", "s1", "rt1", "first")
    await outbox.idle()
    # The socket dies before the first turn's message.start arrives: the chat never shows it
    # running or ended, yet the first prompt's turn is not known to be over.
    outbox.submit("p", "s1", "rt1", "second")
    await outbox.idle()
    assert gw.sent() == ["first"]
    held = outbox.entries()[0]
    assert held.error == HELD
    # Back online: the session's snapshot says idle (the turn ended while we were away).
    outbox.on_online("p")
    await outbox.idle()
    assert gw.sent() == ["first", "second"]
    assert outbox.entries() == []


@pytest.mark.parametrize("after", [0.5, 5.0, 9.5])
async def test_a_follow_up_is_not_held_for_ever_when_its_turn_never_shows(
    store: Store, after: float
) -> None:
    """The first prompt's turn never shows a message.start (its events were lost with a socket
    that came back in between, or it never ran): the follow-up waits at most TURN_START_GRACE,
    then goes out once. Found by the flapping soak (P4/soak): a prompt held for ever. Swept
    over when the follow-up is typed within the grace."""
    gw = FollowedChat()
    clock = ManualClock()
    outbox = Outbox(store, lambda _profile: gw, clock)
    outbox.submit("p", "s1", "rt1", "first")
    await outbox.idle()
    clock.advance(after)
    outbox.submit("p", "s1", "rt1", "second")
    await outbox.idle()
    assert gw.sent() == ["first"]  # still within the grace: it may yet start
    clock.advance(TURN_START_GRACE - after + 0.01)
    await outbox.idle()
    assert gw.sent() == ["first", "second"]
    clock.advance(TURN_START_GRACE * 3)
    await outbox.idle()
    assert gw.sent() == ["first", "second"]


async def test_a_turn_that_started_holds_past_the_grace_until_it_ends(store: Store) -> None:
    gw = FollowedChat()
    clock = ManualClock()
    outbox = Outbox(store, lambda _profile: gw, clock)
    outbox.submit("p", "s1", "rt1", "first")
    await outbox.idle()
    outbox.submit("p", "s1", "rt1", "second")
    await outbox.idle()
    gw.turn_starts()  # a long reply: it streams far past the grace
    clock.advance(TURN_START_GRACE * 5)
    gw.changed()
    await outbox.idle()
    assert gw.sent() == ["first"]
    gw.turn_ends()
    await outbox.idle()
    assert gw.sent() == ["first", "second"]
