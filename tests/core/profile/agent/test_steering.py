"""Steering a running turn: each outcome of `session.steer` settles its text exactly once.

A scripted `call` answers the steer (taken, rejected, -32601, or the link goes before the
answer); the outbox is the real one over the followed-chat fake port. No gateway runs here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop.common.clock import ManualClock
from desktop.common.codes import METHOD_NOT_FOUND
from desktop.common.methods import SESSION_STEER
from desktop.core.delivery.outbox import Outbox
from desktop.core.disk.store import Store
from desktop.core.errors import ConnectionLostError, RpcError
from desktop.core.link.dialect import Dialect
from desktop.core.profile.agent.steering import (
    NOT_SERVED,
    REFUSED,
    UNKNOWN,
    Steering,
    steer_available,
)
from tests.core.delivery.test_outbox_hold import FollowedChat


class Listener:
    def __init__(self) -> None:
        self.notices: list[str] = []
        self.restored: list[tuple[str, str]] = []

    def on_notice(self, key: str, text: str) -> None:
        self.notices.append(text)

    def on_prompt_restored(self, key: str, draft: Any, error: str) -> None:
        self.restored.append((draft.text, error))


class Rig:
    def __init__(self, store: Store, answer: Callable[[], Any]) -> None:
        self.gw = FollowedChat()
        self.outbox = Outbox(store, lambda _profile: self.gw, ManualClock())
        self.listener = Listener()
        self.steers: list[dict[str, Any]] = []
        self.tasks: list[asyncio.Task[Any]] = []
        self._answer = answer

        async def call(method: str, params: dict[str, Any]) -> Any:
            assert method == SESSION_STEER
            self.steers.append(params)
            return self._answer()

        def spawn(coro: Coroutine[Any, Any, Any]) -> None:
            self.tasks.append(asyncio.get_running_loop().create_task(coro))

        self.steering = Steering(
            call=call,
            outbox=self.outbox,
            send=lambda key, text: self.outbox.submit("p", key, "rt1", text) and None,
            notify=lambda fn: fn(self.listener),
            spawn=spawn,
        )

    async def busy(self, *follow_ups: str) -> list[str]:
        self.outbox.submit("p", "s1", "rt1", "first")
        await self.outbox.idle()
        self.gw.turn_starts()
        refs = [self.outbox.submit("p", "s1", "rt1", t).submission_ref for t in follow_ups]
        await self.outbox.idle()
        return refs

    async def settle(self) -> None:
        await asyncio.gather(*self.tasks)
        await self.outbox.idle()

    async def turn_ends(self) -> None:
        self.gw.turn_ends()
        await self.outbox.idle()


@pytest.fixture
def store(data_dir: Path) -> Iterator[Store]:
    s = Store(data_dir / "app.db")
    yield s
    s.close()


def taken() -> Any:
    return {"status": "queued", "text": "x"}


def rejected() -> Any:
    return {"status": "rejected", "text": "x"}


def not_served() -> Any:
    raise RpcError(METHOD_NOT_FOUND, "Method not found", method=SESSION_STEER)


def link_lost() -> Any:
    raise ConnectionLostError("socket closed")


async def test_a_taken_steer_is_not_sent_again_as_a_follow_up(store: Store) -> None:
    rig = Rig(store, taken)
    await rig.busy()
    rig.steering.steer_text("s1", "rt1", "use French")
    await rig.settle()
    await rig.turn_ends()
    assert rig.steers == [{"session_id": "rt1", "text": "use French"}]
    assert rig.gw.sent() == ["first"]
    assert rig.listener.notices == ["Steered the running reply: use French"]


@pytest.mark.parametrize(("answer", "said"), [(rejected, REFUSED), (not_served, NOT_SERVED)])
async def test_a_steer_the_turn_cannot_take_goes_as_the_next_message(
    store: Store, answer: Callable[[], Any], said: str
) -> None:
    rig = Rig(store, answer)
    await rig.busy()
    rig.steering.steer_text("s1", "rt1", "use French")
    await rig.settle()
    assert rig.gw.sent() == ["first"]  # held behind the running turn
    await rig.turn_ends()
    assert rig.gw.sent() == ["first", "use French"]  # once, as its own turn
    assert rig.listener.notices == [said]


async def test_an_unanswered_steer_is_never_sent_again_and_comes_back_to_the_composer(
    store: Store,
) -> None:
    rig = Rig(store, link_lost)
    await rig.busy()
    rig.steering.steer_text("s1", "rt1", "use French")
    await rig.settle()
    await rig.turn_ends()
    assert len(rig.steers) == 1 and rig.gw.sent() == ["first"]
    assert rig.listener.restored == [("use French", UNKNOWN)]


async def test_a_queued_follow_up_steered_now_leaves_the_queue_when_taken(store: Store) -> None:
    rig = Rig(store, taken)
    a, _b = await rig.busy("a", "b")
    assert rig.steering.steer_queued("s1", "rt1", a) is True
    await rig.settle()
    assert [e.text for e in rig.outbox.entries("p")] == ["b"]
    await rig.turn_ends()
    assert rig.gw.sent() == ["first", "b"]


async def test_a_queued_follow_up_whose_steer_went_unanswered_is_not_sent_after_the_turn(
    store: Store,
) -> None:
    rig = Rig(store, link_lost)
    a, _b = await rig.busy("a", "b")
    rig.steering.steer_queued("s1", "rt1", a)
    await rig.settle()
    await rig.turn_ends()
    assert len(rig.steers) == 1
    assert rig.gw.sent() == ["first", "b"]  # a may have reached the agent: not sent twice
    assert rig.listener.restored == [("a", UNKNOWN)]


async def test_a_queued_follow_up_whose_steer_was_rejected_stays_queued(store: Store) -> None:
    rig = Rig(store, rejected)
    a, _b = await rig.busy("a", "b")
    rig.steering.steer_queued("s1", "rt1", a)
    await rig.settle()
    assert [e.text for e in rig.outbox.entries("p")] == ["a", "b"]
    await rig.turn_ends()
    assert rig.gw.sent()[:2] == ["first", "a"]


def test_steer_is_hidden_with_a_reason_where_the_gateway_answered_method_not_found() -> None:
    dialect = Dialect()
    assert steer_available(dialect) == (True, "")
    dialect.learn(SESSION_STEER, {"text": "x"}, METHOD_NOT_FOUND, "Method not found")
    assert steer_available(dialect) == (False, NOT_SERVED)
    assert steer_available(None)[0] is False
