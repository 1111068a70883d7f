"""Queued follow-ups the user reorders or offers to the running turn as a steer.

The fake port from test_outbox_hold follows one chat; a manual clock. No gateway runs here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop.common.clock import ManualClock
from desktop.core.delivery.outbox import Outbox, OutboxError
from desktop.core.disk.store import Store
from tests.core.delivery.test_outbox_hold import FollowedChat


@pytest.fixture
def store(data_dir: Path) -> Iterator[Store]:
    s = Store(data_dir / "app.db")
    yield s
    s.close()


def _outbox(store: Store, gw: FollowedChat) -> Outbox:
    return Outbox(store, lambda _profile: gw, ManualClock())


async def _busy_with(outbox: Outbox, gw: FollowedChat, *follow_ups: str) -> list[str]:
    """A first prompt whose reply streams, then `follow_ups` held behind it; their refs."""
    outbox.submit("p", "s1", "rt1", "first")
    await outbox.idle()
    gw.turn_starts()
    refs = [outbox.submit("p", "s1", "rt1", text).submission_ref for text in follow_ups]
    await outbox.idle()
    return refs


def _queued(store: Store) -> list[str]:
    return [e.text for e in store.outbox_entries("p", "s1")]


async def test_moved_follow_ups_go_out_in_the_new_order_even_after_a_restart(
    store: Store, data_dir: Path
) -> None:
    gw = FollowedChat()
    outbox = _outbox(store, gw)
    a, _b, c = await _busy_with(outbox, gw, "a", "b", "c")
    assert outbox.move(c, -2) is True  # c to the top
    assert outbox.move(a, 1) is True  # a below b
    assert outbox.move(a, 1) is False  # already last
    assert _queued(store) == ["c", "b", "a"]
    await outbox.aclose()
    again = Store(data_dir / "app.db")  # the app restarts with them queued
    try:
        restarted = _outbox(again, gw)
        assert _queued(again) == ["c", "b", "a"]
        gw.turn_ends()
        await restarted.flush()
        for _ in range(2):  # each follow-up is its own turn, bound to its own reply
            gw.turn_starts()
            gw.turn_ends()
            await restarted.idle()
        assert gw.sent() == ["first", "c", "b", "a"]
        await restarted.aclose()
    finally:
        again.close()


async def test_a_follow_up_offered_as_a_steer_is_not_sent_meanwhile_nor_after_it_was_taken(
    store: Store,
) -> None:
    gw = FollowedChat()
    outbox = _outbox(store, gw)
    a, _b = await _busy_with(outbox, gw, "a", "b")
    outbox.hold_for_steer(a)
    with pytest.raises(OutboxError):
        outbox.edit(a, "changed while on its way")
    gw.turn_ends()  # the turn ends before the steer's answer came
    await outbox.idle()
    assert gw.sent() == ["first"]  # neither a (out as a steer) nor b (behind it) went
    outbox.steered(a)  # taken (or unknown): it leaves the queue for good
    await outbox.idle()
    assert gw.sent() == ["first", "b"]
    assert _queued(store) == []


async def test_a_refused_steer_leaves_the_follow_up_queued_in_its_place(store: Store) -> None:
    gw = FollowedChat()
    outbox = _outbox(store, gw)
    a, _b = await _busy_with(outbox, gw, "a", "b")
    outbox.hold_for_steer(a)
    outbox.not_steered(a)
    await outbox.idle()
    assert gw.sent() == ["first"]  # still held behind the running turn
    outbox.edit(a, "a, edited")  # editable again
    gw.turn_ends()
    await outbox.idle()
    assert gw.sent() == ["first", "a, edited"]
