"""SessionEvents: what a gateway event means for the window beyond the chat itself."""

from __future__ import annotations

from pathlib import Path

from tests.core.controller_rig import rig, settle, two_chats


async def test_a_gateway_notice_reaches_the_user_on_the_chat_it_concerns(tmp_path: Path) -> None:
    async with rig(tmp_path, seed=two_chats) as r:
        r.gw.runtime_of.update(s1="r1", s2="r2")
        r.ctl.open_session("s2")
        r.ctl.open_session("s1")
        await r.online()
        await settle(lambda: r.router.runtime_id("s2") == "r2", "s2 followed")

        r.emit("notice", "r2", text="context compressed")
        r.emit("notice", "r1", message="model switched")
        r.emit("notice", "r9", text="a session this window does not follow")
        r.emit("notice", "r1", text="")

        assert r.seen.of("on_notice") == [("s2", "context compressed"), ("s1", "model switched")]


async def test_a_turn_ending_off_screen_marks_its_chat_unread_once_per_turn(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, seed=two_chats) as r:
        r.gw.runtime_of.update(s1="r1", s2="r2")
        r.ctl.open_session("s2")
        r.ctl.view_session("main", "s1")
        r.ctl.open_session("s1")  # on screen
        await r.online()
        await settle(lambda: r.router.runtime_id("s2") == "r2", "s2 followed")

        r.emit("message.delta", "r2", text="still writing")
        assert r.summary("s2").unread == 0, "a reply being written is not news yet"
        r.emit("message.complete", "r2", text="done")
        r.emit("error", "r2", message="the next one failed")
        r.emit("message.complete", "r9", text="not a chat of this window")

        assert (r.summary("s1").unread, r.summary("s2").unread) == (0, 2)
