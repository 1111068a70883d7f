"""TempSessions: chats typed into before the gateway has them, created there once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop.core.errors import RpcError, StorageFullError
from desktop.core.models import DeliveryState
from tests.core.controller_rig import rig, settle, user_bubbles


async def test_send_on_a_new_chat_creates_the_session_once_and_sends_the_prompt_once(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        r.gw.runs_turns = True  # the second prompt waits for the first one's turn to end
        await r.online()
        temp = r.ctl.create_session()
        r.ctl.send(temp, "hello there", ())
        r.ctl.send(temp, "second thought", ())  # while session.create is still in flight
        await settle(lambda: len(r.gw.calls("prompt.submit")) == 2, "both prompts sent")
        await r.outbox.idle()

        assert len(r.gw.calls("session.create")) == 1
        assert [p["text"] for p in r.gw.calls("prompt.submit")] == ["hello there", "second thought"]
        assert {p["session_id"] for p in r.gw.calls("prompt.submit")} == {"r1"}
        assert r.seen.of("on_session_key_changed") == [(temp, "s1")]
        assert [s.key for s in r.ctl.sessions()] == ["s1"]
        assert r.summary("s1").title == "hello there"
        # The temporary key still works for intents that were in flight.
        shown = user_bubbles(r.ctl.open_session(temp))
        assert [m.text for m in shown] == ["hello there", "second thought"]
        assert {m.delivery for m in shown} == {DeliveryState.CONFIRMED}


async def test_a_prompt_typed_offline_in_a_new_chat_goes_out_once_after_connecting(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        temp = r.ctl.create_session()
        r.ctl.send(temp, "written on the train", ())
        pending = user_bubbles(r.ctl.open_session(temp))
        assert [(m.text, m.delivery) for m in pending] == [
            ("written on the train", DeliveryState.PENDING)
        ]
        assert r.net.calls == []

        await r.online()
        await settle(lambda: len(r.gw.calls("prompt.submit")) == 1, "prompt sent")
        await r.outbox.idle()
        await settle(lambda: bool(r.gw.calls("session.list")), "list refreshed")

        assert len(r.gw.calls("session.create")) == 1
        assert len(r.gw.calls("prompt.submit")) == 1
        assert r.gw.calls("session.create")[0] == {"title": "written on the train"}
        assert r.ctl.open_session(temp)[-1].delivery is DeliveryState.CONFIRMED


async def test_an_empty_new_chat_made_offline_is_not_created_on_the_gateway(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        empty = r.ctl.create_session()
        used = r.ctl.create_session()
        r.ctl.send(used, "only this one has something to send", ())
        await r.online()
        await settle(lambda: len(r.gw.calls("prompt.submit")) == 1, "prompt sent")

        assert len(r.gw.calls("session.create")) == 1
        assert r.gw.calls("session.create")[0] == {"title": "only this one has something to send"}
        assert r.seen.of("on_session_key_changed") == [(used, "s1")]
        assert empty in [s.key for s in r.ctl.sessions()], "still listed, created once used"


async def test_a_new_chat_made_online_is_created_at_once_and_its_draft_moves_along(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        await r.online()
        temp = r.ctl.create_session()
        r.ctl.save_draft(temp, "not sent yet", 12, ())
        await settle(lambda: bool(r.seen.of("on_session_key_changed")), "created")

        assert r.gw.calls("session.create") == [{}], "no title before the first prompt"
        assert r.ctl.load_draft("s1") is not None
        assert r.ctl.load_draft("s1").text == "not sent yet"  # type: ignore[union-attr]


async def test_a_refused_create_is_tried_again_on_the_next_connect_without_a_word(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        refusals = [RpcError(5000, "agent is starting", method="session.create")]

        def refuse_once(method: str, params: dict[str, Any]) -> Any:
            if method == "session.create" and refusals:
                return refusals.pop()
            return r.gw.handle(method, params)

        r.net.handler = refuse_once
        temp = r.ctl.create_session()
        r.ctl.send(temp, "hello", ())
        await r.online()
        await settle(lambda: not refusals, "the first create refused")
        assert r.seen.of("on_session_key_changed") == []
        r.net.clients[-1].drop("test: link dropped")
        await settle(lambda: not r.port.is_online(), "the drop noticed")
        r.clock.advance(30.0)  # past any reconnect delay
        await settle(lambda: bool(r.seen.of("on_session_key_changed")), "created on reconnect")
        await settle(lambda: len(r.gw.calls("prompt.submit")) == 1, "prompt sent")
        assert r.seen.of("on_notice") == []


async def test_a_new_chat_the_disk_cannot_record_is_told_and_not_adopted(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        healthy = r.store.upsert_session

        def full(profile_id: str, key: str, **fields: Any) -> Any:
            if key == "s1":
                raise StorageFullError("could not save the session: the disk is full")
            return healthy(profile_id, key, **fields)

        r.store.upsert_session = full  # type: ignore[method-assign]
        await r.online()
        temp = r.ctl.create_session()
        await settle(lambda: bool(r.seen.of("on_notice")), "told")

        assert r.seen.of("on_notice") == [
            (temp, "could not save the new chat: could not save the session: the disk is full")
        ]
        assert r.seen.of("on_session_key_changed") == []
        assert temp in [s.key for s in r.ctl.sessions()]
