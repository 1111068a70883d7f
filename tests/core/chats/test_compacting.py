"""The compacting state on the status line: shown while asked or mid-turn, never left stuck."""

from __future__ import annotations

from typing import Any

from desktop.core.chats.conversation import Conversation
from desktop.core.link.protocol import Event


def ev(etype: str, **payload: Any) -> Event:
    return Event(type=etype, session_id="r", payload=payload)


def test_compacting_shows_between_turns_only_while_a_compress_is_asked() -> None:
    conv = Conversation("k")
    conv.set_compacting(True)
    assert conv.session_info().activity == "Compacting the conversation…"
    conv.apply(ev("status.update", kind="compressing", text="compressing 4 messages"))
    assert conv.session_info().activity == "compressing 4 messages"
    conv.apply(ev("status.update", kind="status", text="still at it"))
    assert conv.session_info().activity == "still at it", "shown until the answer"
    conv.set_compacting(False)
    assert conv.session_info().activity == ""
    conv.apply(ev("status.update", kind="compacting", text="late compacting line"))
    assert conv.session_info().activity == "", "a late one after the answer does not stick"


def test_mid_turn_compaction_shows_and_ends_with_the_turn() -> None:
    conv = Conversation("k")
    conv.apply(ev("message.start"))
    conv.apply(ev("status.update", kind="compacting", text="Compacting context"))
    assert conv.session_info().activity == "Compacting context" and conv.compacting
    conv.apply(ev("message.complete", text="Done.", status="complete"))
    assert conv.session_info().activity == "" and not conv.compacting
