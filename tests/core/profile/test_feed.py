"""ConversationFeed: each chat's changes as the window hears them, no more than changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop.core.disk.store import CachedMessage, Store
from desktop.core.models import Role
from tests.core.controller_rig import Rig, rig, settle


def _chat(store: Store) -> None:
    store.upsert_session("p", "s1", runtime_id="r1", title="Chat")
    store.replace_messages(
        "p",
        "s1",
        [CachedMessage(0, "user", "what is 2 + 2?"), CachedMessage(1, "assistant", "4")],
    )


async def _open_online(r: Rig) -> None:
    r.gw.runtime_of["s1"] = "r1"
    r.ctl.open_session("s1")
    await r.online()
    await settle(lambda: r.router.runtime_id("s1") == "r1", "s1 followed")


async def test_a_chat_opened_before_the_gateway_answers_shows_and_keeps_what_was_cached(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, seed=_chat) as r:
        shown = r.ctl.open_session("s1")  # offline

        assert [(m.role, m.text) for m in shown] == [
            (Role.USER, "what is 2 + 2?"),
            (Role.ASSISTANT, "4"),
        ]
        # A prompt queued there joins that history on screen; it does not replace it.
        r.ctl.send("s1", "and 3 + 3?", ())
        [(key, messages)] = r.seen.of("on_session_messages")[-1:]
        assert (key, [m.text for m in messages]) == ("s1", ["what is 2 + 2?", "4", "and 3 + 3?"])
        assert [m.text for m in r.ctl.open_session("s1")] == ["what is 2 + 2?", "4", "and 3 + 3?"]


async def test_a_reply_being_written_updates_its_own_bubble_not_the_whole_chat(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, seed=_chat) as r:
        await _open_online(r)
        r.emit("message.start", "r1")
        r.emit("message.delta", "r1", text="The answer")
        wholes = len(r.seen.of("on_session_messages"))
        changes = len(r.seen.of("on_message_changed"))

        for word in (" is", " four", "."):
            r.emit("message.delta", "r1", text=word)

        assert len(r.seen.of("on_session_messages")) == wholes, "the whole chat sent again"
        changed = r.seen.of("on_message_changed")[changes:]
        assert len(changed) == 3, "one change per delta"
        assert {(key, m.id) for key, m in changed} == {("s1", changed[0][1].id)}
        assert changed[0][1].text == "The answer is four." and changed[0][1].streaming


async def test_the_agents_model_is_told_when_it_changes_and_only_then(tmp_path: Path) -> None:
    async with rig(tmp_path, seed=_chat) as r:
        await _open_online(r)
        r.emit("message.start", "r1")  # a reply runs (that is in the info too)
        before = len(r.seen.of("on_session_info"))

        r.emit("session.info", "r1", model="m-large", provider="openrouter")
        r.emit("session.info", "r1", model="m-large", provider="openrouter")
        r.emit("message.delta", "r1", text="unrelated")
        r.emit("session.info", "r1", model="m-small", provider="openrouter")

        infos = [(key, i.model) for key, i in r.seen.of("on_session_info")[before:]]
        assert infos == [("s1", "m-large"), ("s1", "m-small")]


@pytest.mark.parametrize("opened", ["before connecting", "once online"])
async def test_a_chat_read_online_is_kept_offline_as_the_user_saw_it(
    tmp_path: Path, opened: str
) -> None:
    rows = [
        {"role": "user", "text": "what is 2 + 2?"},
        {"role": "assistant", "text": "4"},
        {"role": "user", "text": "and 3 + 3?"},  # asked from another computer
        {"role": "assistant", "text": "6"},
    ]
    async with rig(tmp_path, seed=_chat) as r:
        answer = r.net.handler

        def with_history(method: str, params: dict[str, Any]) -> Any:
            result = answer(method, params)
            if method in ("session.activate", "session.resume"):
                return {**result, "messages": rows, "message_count": len(rows)}
            return result

        r.net.handler = with_history
        if opened == "once online":
            await r.online()
            r.ctl.open_session("s1")  # picked from the list: resumed by its stored id
        else:
            await _open_online(r)

        def shown() -> list[str]:
            return [m.text for _key, ms in r.seen.of("on_session_messages")[-1:] for m in ms]

        await settle(lambda: len(shown()) == len(rows), "the history shown")
        seen = shown()
        assert seen == [row["text"] for row in rows]

    async with rig(tmp_path) as offline:  # the app started again without its gateway
        assert [m.text for m in offline.ctl.open_session("s1")] == seen


async def test_a_reconnect_sends_each_open_chats_list_to_the_window_once(tmp_path: Path) -> None:
    histories = {
        "r1": [{"role": "user", "text": "what is 2 + 2?"}, {"role": "assistant", "text": "4"}],
        "r2": [{"role": "user", "text": "and 3 + 3?"}, {"role": "assistant", "text": "6"}],
    }

    def two_chats_with_history(store: Store) -> None:
        store.upsert_session("p", "s1", runtime_id="r1", title="One", updated_at=2.0)
        store.upsert_session("p", "s2", runtime_id="r2", title="Two", updated_at=1.0)

    async with rig(tmp_path, seed=two_chats_with_history) as r:
        answer = r.net.handler

        def with_history(method: str, params: dict[str, Any]) -> Any:
            result = answer(method, params)
            if method in ("session.activate", "session.resume"):
                rows = histories[result["session_id"]]
                return {**result, "messages": rows, "message_count": len(rows)}
            return result

        r.net.handler = with_history
        r.gw.runtime_of.update(s1="r1", s2="r2")
        r.ctl.open_session("s1")
        r.ctl.open_session("s2")
        await r.online()
        await settle(lambda: len(r.seen.of("on_session_messages")) >= 2, "both chats shown")
        await r.outbox.idle()
        before = len(r.seen.of("on_session_messages"))

        r.net.clients[-1].drop("test: connection reset")  # a TCP reset under the socket
        await settle(lambda: not r.port.is_online(), "the drop noticed")
        r.clock.advance(30.0)  # past any reconnect delay
        await settle(r.port.is_online, "online again with both chats re-attached")
        await r.outbox.idle()

        lists = r.seen.of("on_session_messages")[before:]
        # Each chat's whole list reached the window exactly once (not from the feed and again
        # from the catch-up), and it still holds every earlier turn.
        assert sorted(key for key, _ in lists) == ["s1", "s2"]
        shown = {key: [m.text for m in messages] for key, messages in lists}
        assert shown == {"s1": ["what is 2 + 2?", "4"], "s2": ["and 3 + 3?", "6"]}


async def test_the_sessions_info_status_and_usage_send_no_bubble_again(tmp_path: Path) -> None:
    """Hermes sends session.info, status.update and session.usage around every turn (0.20.1 a
    session.info just after message.complete): each one sent the chat's whole message list to
    the window (every bubble laid out again; after a reconnect, a second whole list), and while
    a reply ran the growing bubble once more. Now only what shows them hears of them."""
    async with rig(tmp_path, seed=_chat) as r:
        await _open_online(r)
        news = ("session.info", "status.update", "session.usage", "session.title")

        def counts() -> tuple[int, int, int]:
            return (
                len(r.seen.of("on_session_messages")),
                len(r.seen.of("on_message_changed")),
                len(r.seen.of("on_session_info")),
            )

        for running in (False, True):
            if running:
                r.emit("message.start", "r1")
                r.emit("message.delta", "r1", text="Working")
            wholes, changed, infos = counts()
            r.emit("session.info", "r1", model=f"m-{running}", title=f"Chat {running}")
            r.emit("status.update", "r1", kind="thinking", text=f"thinking {running}")
            r.emit("session.usage", "r1", usage={"context_used": 9, "context_max": 90})
            r.emit("session.title", "r1", title=f"Titled {running}")
            now = counts()
            assert now[0] == wholes, f"{news} sent the whole chat again (running: {running})"
            assert now[1] == changed, f"{news} sent a bubble again (running: {running})"
            assert now[2] > infos, "the header and status line heard of them"
        # A snapshot then (a reconnect's reattach): the list the window has is still whole,
        # so it is not sent once more.
        r.emit("message.complete", "r1", text="Working", status="complete")
        feed = r.ctl._feed
        feed.on_router_snapshot("s1", {"messages": []})  # sent whole (the last send was a bubble)
        wholes = len(r.seen.of("on_session_messages"))
        r.emit("session.info", "r1", model="m-after")
        feed.on_router_snapshot("s1", {"messages": []})
        assert len(r.seen.of("on_session_messages")) == wholes, "sent whole again after the info"
        info = r.ctl.session_info("s1")
        assert info.model == "m-after" and info.context_percent == 10
        assert r.ctl.summary("s1").title == "Titled True"  # type: ignore[union-attr]
