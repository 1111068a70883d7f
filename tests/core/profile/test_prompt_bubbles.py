"""PromptBubbles: the bubbles of prompts only this side has (queued, failed, unconfirmed)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from desktop.core.chats.index import TURN_CACHE_DELAY
from desktop.core.errors import RpcError, StorageError
from desktop.core.models import ChatMessage, DeliveryState, Role
from desktop.core.profile.prompt_bubbles import bubble_id, echoed, ref_of
from tests.core.controller_rig import one_chat, rig, settle, user_bubbles


def _user(message_id: str, text: str) -> ChatMessage:
    return ChatMessage(id=message_id, role=Role.USER, text=text)


def test_a_bubble_is_taken_as_echoed_only_by_the_gateways_copy_after_its_mark() -> None:
    bubble = _user(bubble_id("ref-1"), "same  words\n")
    older = _user("g1", "same words")  # asked before, in the history already
    mine = _user(bubble_id("ref-1"), "same words")  # this side's own bubble
    copy = _user("g2", "same words")

    assert not echoed([older], bubble, history_mark=1), "an older identical prompt is not it"
    assert not echoed([older, mine], bubble, history_mark=1), "nor is the bubble itself"
    assert echoed([older, copy], bubble, history_mark=1), "white space aside, the copy is"
    assert not echoed([older, ChatMessage("a1", Role.ASSISTANT, "same words")], bubble, 1)


def test_a_bubble_names_its_outbox_entry_and_no_other_message_does() -> None:
    assert ref_of(bubble_id("ref-1")) == "ref-1"
    assert ref_of("g1") is None


async def test_discarding_a_queued_prompt_means_it_is_never_sent(tmp_path: Path) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        r.gw.runtime_of["s1"] = "r1"
        r.ctl.send("s1", "second thoughts", ())
        r.ctl.send("s1", "keep this one", ())
        first = user_bubbles(r.ctl.open_session("s1"))[0]

        r.ctl.discard(first.id)

        assert ("s1", first.id) in r.seen.of("on_message_removed")
        await r.online()
        await settle(lambda: len(r.gw.calls("prompt.submit")) == 1, "the other prompt sent")
        await r.outbox.idle()
        assert [p["text"] for p in r.gw.calls("prompt.submit")] == ["keep this one"]
        shown = user_bubbles(r.ctl.open_session("s1"))
        assert [(m.text, m.delivery) for m in shown] == [("keep this one", DeliveryState.CONFIRMED)]


async def test_a_prompt_given_back_to_the_composer_leaves_no_bubble(tmp_path: Path) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        r.gw.runtime_of["s1"] = "r1"
        r.gw.submit_error = RpcError(-32000, "the model refused", method="prompt.submit")
        r.ctl.open_session("s1")
        await r.online()
        r.ctl.send("s1", "please do it", ())
        await settle(lambda: bool(r.seen.of("on_prompt_restored")), "prompt restored")
        await r.outbox.idle()

        [(key, draft, error)] = r.seen.of("on_prompt_restored")
        assert (key, draft.text, error) == ("s1", "please do it", "the model refused")
        assert [args[0] for args in r.seen.of("on_message_removed")] == ["s1"]
        assert user_bubbles(r.ctl.open_session("s1")) == []
        restored = r.ctl.load_draft("s1")
        assert restored is not None and restored.text == "please do it"
        assert r.outbox.entries("p") == []


async def test_editing_an_unsent_prompt_takes_it_back_and_it_is_never_sent(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        r.gw.runtime_of["s1"] = "r1"
        r.ctl.send("s1", "not yet", ())
        [bubble] = user_bubbles(r.ctl.open_session("s1"))
        assert bubble.delivery is DeliveryState.PENDING

        draft = r.ctl.edit_unsent(bubble.id)

        assert draft is not None and draft.text == "not yet"
        assert ("s1", bubble.id) in r.seen.of("on_message_removed")
        assert user_bubbles(r.ctl.open_session("s1")) == []
        await r.online()
        await settle(lambda: bool(r.gw.calls("session.list")), "list refreshed")
        await r.outbox.idle()
        assert r.gw.calls("prompt.submit") == []


async def test_retrying_a_failed_prompt_sends_it_again_from_a_single_bubble(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        r.gw.runtime_of["s1"] = "r1"
        r.gw.submit_error = RpcError(-32000, "the model refused", method="prompt.submit")

        def disk_full(*_: Any) -> Any:
            raise StorageError("disk full")

        r.drafts.restore = disk_full  # type: ignore[method-assign]
        r.ctl.open_session("s1")
        await r.online()
        r.ctl.send("s1", "try me", ())
        await settle(
            lambda: (
                [m.delivery for m in user_bubbles(r.ctl.open_session("s1"))]
                == [DeliveryState.FAILED]
            ),
            "the bubble shows the failure",
        )
        await r.outbox.idle()
        [failed] = user_bubbles(r.ctl.open_session("s1"))
        assert failed.delivery_error == "the model refused"
        r.ctl.save_draft("s1", "try me", 6, ())  # the user also typed it back in

        r.gw.submit_error = None
        r.ctl.retry(failed.id)
        await settle(lambda: len(r.gw.calls("prompt.submit")) == 2, "prompt sent again")
        await r.outbox.idle()

        shown = user_bubbles(r.ctl.open_session("s1"))
        assert [(m.text, m.delivery) for m in shown] == [("try me", DeliveryState.CONFIRMED)]
        assert r.ctl.load_draft("s1") is None  # not left in the composer to be sent twice
        refs = [c.get("submission_ref") for c in r.gw.calls("prompt.submit")]
        assert refs[0] == refs[1], "a retry goes out under the prompt's original idempotency key"
        assert r.outbox.entries("p") == [], "nothing is left to be offered again on reconnect"


async def test_a_prompt_confirmed_after_its_turn_ended_stays_and_is_cached_with_its_reply(
    tmp_path: Path,
) -> None:
    # A cut link: the turn ran and ended (replayed by a 0.22 gateway, no history after it)
    # while the prompt was still unconfirmed; it is settled only then.
    async with rig(tmp_path, seed=one_chat) as r:
        r.gw.runtime_of["s1"] = "r1"
        r.ctl.open_session("s1")
        await r.online()
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        scripted = r.net.handler
        assert scripted is not None
        r.net.handler = lambda m, p: answer if m == "prompt.submit" else scripted(m, p)
        r.ctl.send("s1", "did it run?", ())
        await settle(lambda: len(r.gw.calls("prompt.submit")) == 1, "prompt sent")
        r.emit("message.start", "r1")
        r.emit("message.complete", "r1", text="it ran", status="complete")
        r.clock.advance(TURN_CACHE_DELAY)
        assert [m.role for m in r.store.messages("p", "s1")] == ["assistant"]

        answer.set_result({"ok": True})
        await r.outbox.idle()

        shown = [(m.role.value, m.text, m.delivery) for m in r.ctl.open_session("s1")]
        assert [row[:2] for row in shown] == [("user", "did it run?"), ("assistant", "it ran")]
        assert shown[0][2] is DeliveryState.CONFIRMED
        cached = [(m.role, m.text) for m in r.store.messages("p", "s1")]
        assert cached == [("user", "did it run?"), ("assistant", "it ran")], (
            "offline, the reply would show without its prompt"
        )
