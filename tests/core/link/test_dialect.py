"""The dialect: read field by field from each real line's ready frame, then taught by refusals."""

from __future__ import annotations

from typing import Any

import pytest

from desktop.common.clock import ManualClock
from desktop.common.codes import BAD_PARAMS, METHOD_NOT_FOUND
from desktop.core.errors import RpcError
from desktop.core.link.dialect import Dialect
from tests.core.fakes import FakeGateway, RpcFailure
from tests.core.link.test_client import open_client

# The ready payloads the real lines send (captured on loopback).
READY_019 = {"skin": {}}
READY_0201 = {"skin": {}, "change_events": True}
READY_022 = {"skin": {}, "change_events": True, "heartbeat": True, "replay_epoch": "e1b2"}


def test_each_real_line_is_read_field_by_field() -> None:
    legacy, axis, iot = (Dialect.from_ready(p) for p in (READY_019, READY_0201, READY_022))
    assert (legacy.heartbeat, legacy.event_replay, legacy.change_events) == (False, False, False)
    assert (axis.heartbeat, axis.event_replay, axis.change_events) == (False, False, True)
    # 0.22 numbers its events within a replay epoch without advertising `event_replay`.
    assert (iot.heartbeat, iot.event_replay, iot.replay_epoch) == (True, True, "e1b2")
    assert not any(d.submission_ref or d.history_window for d in (legacy, axis, iot))


def test_a_refused_param_is_remembered_and_left_out() -> None:
    d = Dialect.from_ready(READY_022)
    message = (
        "invalid params for session.history: offset: Extra inputs are not permitted; "
        "limit: Extra inputs are not permitted — the client and the Hermes backend are out of sync"
    )
    params = {"session_id": "s1", "offset": 0, "limit": 200}
    assert d.learn("session.history", params, BAD_PARAMS, message) is True
    assert d.fit("session.history", params) == {"session_id": "s1"}
    assert not d.accepts("session.history", "offset")
    assert d.accepts("prompt.submit", "offset")  # per method


def test_a_refusal_naming_nothing_sent_teaches_nothing() -> None:
    d = Dialect.from_ready(READY_022)
    assert not d.learn("x.y", {"a": 1}, BAD_PARAMS, "b: Extra inputs are not permitted")
    assert not d.learn("x.y", {"a": 1}, 4009, "session busy")
    assert d.rejected == {}


def test_a_missing_method_is_remembered() -> None:
    d = Dialect.from_ready(READY_019)
    assert d.has("client.capabilities")
    assert not d.learn("client.capabilities", {}, METHOD_NOT_FOUND, "unknown method")
    assert not d.has("client.capabilities")


async def test_the_client_sends_a_refused_param_never_again() -> None:
    gw = FakeGateway(ready=READY_022)
    seen: list[dict[str, Any]] = []

    def history(params: dict[str, Any]) -> Any:
        seen.append(dict(params))
        for name in ("limit", "offset"):  # 0.22 names one refused param per refusal
            if name in params:
                raise RpcFailure(
                    BAD_PARAMS,
                    f"invalid params for session.history: {name}: Extra inputs are not permitted",
                )
        return {"count": 1, "messages": [{"role": "user", "text": "hi"}]}

    gw.handlers["session.history"] = history
    client, gw, _clock, _rec = await open_client(gw, ManualClock())
    asked = {"session_id": "s1", "offset": 0, "limit": 9}
    first = await client.call("session.history", asked)
    second = await client.call("session.history", asked)
    assert first["count"] == second["count"] == 1
    # Refused param by param, sent again without each at once, and never again on this link.
    assert seen == [
        asked,
        {"session_id": "s1", "offset": 0},
        {"session_id": "s1"},
        {"session_id": "s1"},
    ]
    await client.close()


async def test_other_refusals_still_reach_the_caller() -> None:
    gw = FakeGateway(ready=READY_022)

    def submit(params: dict[str, Any]) -> Any:
        raise RpcFailure(4009, "session busy")

    gw.handlers["prompt.submit"] = submit
    client, gw, _clock, _rec = await open_client(gw, ManualClock())
    with pytest.raises(RpcError) as err:
        await client.call("prompt.submit", {"session_id": "s1", "text": "x"})
    assert err.value.code == 4009
    assert len(gw.peer.requests("prompt.submit")) == 1
    await client.close()


def test_a_ready_frames_method_list_leaves_out_what_it_does_not_serve() -> None:
    d = Dialect.from_ready({"capabilities": {"methods": ["prompt.submit", "session.history"]}})
    assert d.has("prompt.submit") and not d.has("session.steer")
    d.learn("session.history", {}, -32601, "method not found")
    assert not d.has("session.history"), "a listed method answered -32601 is still not there"
    # No list, or not a list of names (every Hermes line): only -32601 answers are learned.
    for caps in ({}, {"methods": "all"}, {"methods": ["prompt.submit", 3]}):
        assert Dialect.from_ready({"capabilities": caps}).has("session.steer")
