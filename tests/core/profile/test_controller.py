"""ProfileController over a scripted gateway: temp sessions, bubbles, unread marks, the list."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from desktop.common.codes import SESSION_NOT_FOUND
from desktop.core.chats.index import TURN_CACHE_DELAY
from desktop.core.disk.store import Store
from desktop.core.errors import RpcError, StorageFullError, StorageReadOnlyError
from desktop.core.models import ChatMessage, DeliveryState, Role
from tests.core.controller_rig import one_chat, rig, settle, two_chats, user_bubbles

# -- delivery after a resume ------------------------------------------------------------------


async def test_the_reply_to_a_prompt_whose_session_was_resumed_on_sending_shows_at_once(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        r.gw.runtime_of["s1"] = "r1"
        r.ctl.open_session("s1")
        await r.online()
        await settle(lambda: bool(r.seen.of("on_session_messages")), "s1 resumed")
        r.net.clients[-1].emit("message.complete", "r1", seq=4, text="an earlier reply")
        epoch = r.ctl.status().epoch
        # The gateway reaps the idle session while the socket stays up: r1 is unknown now.
        r.gw.reaped.add("r1")
        r.gw.runtime_of["s1"] = "r9"

        r.ctl.send("s1", "still there?", ())
        await settle(lambda: len(r.gw.calls("prompt.submit")) == 2, "sent again after resume")
        await r.outbox.idle()
        # The new runtime numbers its events from 1 again.
        r.net.clients[-1].emit("message.complete", "r9", seq=1, text="yes, right here")

        assert [p["session_id"] for p in r.gw.calls("prompt.submit")] == ["r1", "r9"]
        shown = [(m.role, m.text) for m in r.ctl.open_session("s1")]
        assert shown == [
            (Role.ASSISTANT, "an earlier reply"),
            (Role.USER, "still there?"),
            (Role.ASSISTANT, "yes, right here"),
        ]
        assert r.ctl.status().epoch == epoch  # no reconnect was needed to see it
        s1 = r.store.session("p", "s1")
        assert s1 is not None and s1.runtime_id == "r9"


# -- the session list ------------------------------------------------------------------------


async def test_a_finished_turn_marks_unread_only_the_sessions_not_on_screen(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, seed=two_chats) as r:
        r.gw.runtime_of.update(s1="r1", s2="r2")
        await r.online()
        r.ctl.open_session("s2")
        r.ctl.view_session("main", "s1")
        r.ctl.open_session("s1")  # s1 is on screen now
        await settle(lambda: len(r.gw.calls("session.resume")) == 2, "both resumed")
        await settle(lambda: r.router.runtime_id("s2") == "r2", "s2 routed")

        r.emit("message.complete", "r2", text="done in the background")
        r.emit("message.complete", "r1", text="done right here")
        r.emit("error", "r2", message="and then it failed")

        assert (r.summary("s1").unread, r.summary("s2").unread) == (0, 2)
        assert {s.key: s.unread for s in r.seen.of("on_sessions")[-1][0]} == {"s1": 0, "s2": 2}
        r.ctl.open_session("s2")
        assert r.summary("s2").unread == 0


async def test_a_chat_on_screen_in_any_window_gathers_no_unread_marks(tmp_path: Path) -> None:
    # s1 in a chat window of its own, the main window on s2: both are read as they end. Once
    # the main window shows another profile and the chat window closes, both gather marks.
    async with rig(tmp_path, seed=two_chats) as r:
        r.gw.runtime_of.update(s1="r1", s2="r2")
        await r.online()
        r.ctl.view_session("window", "s1")
        r.ctl.open_session("s1")
        r.ctl.view_session("main", "s1")
        r.ctl.view_session("main", "s2")  # the main window opens another chat of the profile
        r.ctl.open_session("s2")
        await settle(lambda: r.router.runtime_id("s2") == "r2", "s2 routed")
        await settle(lambda: r.router.runtime_id("s1") == "r1", "s1 routed")

        r.emit("message.complete", "r1", text="read in its window")
        r.emit("message.complete", "r2", text="read in the main window")
        assert (r.summary("s1").unread, r.summary("s2").unread) == (0, 0)
        r.ctl.view_session("main", None)  # another profile's chat in front
        r.ctl.view_session("window", None)  # its window closed
        r.emit("message.complete", "r1", text="now in the background")
        r.emit("message.complete", "r2", text="and this one")
        assert (r.summary("s1").unread, r.summary("s2").unread) == (1, 1)
        r.ctl.view_session("window", "s1")  # shown again: read
        assert (r.summary("s1").unread, r.ctl.unread()) == (0, 1)


async def test_previews_in_the_list_are_plain_text(tmp_path: Path) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        r.gw.listing = [
            {"id": "s9", "title": "From the phone", "preview": "## Plan\n* `ls` ![img](x.png)"},
        ]
        r.ctl.send("s1", "**Bold** and [a link](http://x.test)\n`code`  here", ())
        assert r.summary("s1").preview == "Bold and a link code here"

        await r.online()
        await settle(lambda: any(s.key == "s9" for s in r.ctl.sessions()), "list merged")
        assert r.summary("s9").preview == "Plan ls img"


async def test_a_list_refresh_takes_new_titles_and_keeps_runtime_ids_and_marks(
    tmp_path: Path,
) -> None:
    def seed(store: Store) -> None:
        store.upsert_session("p", "s1", runtime_id="r1", title="Old title", updated_at=5.0)

    async with rig(tmp_path, seed=seed) as r:
        r.gw.runtime_of["s1"] = "r1"
        r.gw.listing = [
            {"id": "s1", "title": "Renamed on the phone", "updated_at": 10.0},
            {"id": "s7", "title": "Started elsewhere", "updated_at": 20.0},
        ]
        await r.online()
        await settle(lambda: len(r.ctl.sessions()) == 2, "list merged")

        assert [(s.key, s.title) for s in r.ctl.sessions()] == [
            ("s7", "Started elsewhere"),
            ("s1", "Renamed on the phone"),
        ]
        assert r.summary("s1").runtime_id == "r1"
        r.ctl.send("s1", "still reaches the same session", ())
        await settle(lambda: bool(r.gw.calls("prompt.submit")), "prompt sent")
        await r.outbox.idle()
        assert r.gw.calls("prompt.submit")[0]["session_id"] == "r1"


# -- approvals and questions -------------------------------------------------------------------


async def test_each_request_reaches_the_window_once_and_each_answer_has_hermes_shape(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        await r.online()
        temp = r.ctl.create_session()
        await settle(lambda: r.ctl.sessions()[0].key == "s1", "created")
        approval = {"command": "chmod 777 x", "request_id": "a1", "choices": ["once", "deny"]}
        r.emit("approval.request", "r1", **approval)
        r.emit("approval.request", "r1", **approval)  # the same request again
        r.emit("sudo.request", "r1", request_id="p1")
        r.emit("clarify.request", "r1", question="Which?", choices=["x"], request_id="q1")
        asked = [(k, req.request_id, req.kind) for k, req in r.seen.of("on_approval_request")]
        assert asked == [("s1", "a1", "approval"), ("s1", "p1", "sudo"), ("s1", "q1", "clarify")]
        r.ctl.respond(temp, "a1", "session")
        r.ctl.respond("s1", "p1", "hunter2")
        r.ctl.respond("s1", "q1", "x")
        await settle(lambda: len(r.gw.calls("clarify.respond")) == 1, "answers sent")
        assert [(m, p) for m, p in r.net.calls if m.endswith(".respond")] == [
            ("approval.respond", {"session_id": "r1", "request_id": "a1", "choice": "session"}),
            ("sudo.respond", {"session_id": "r1", "request_id": "p1", "password": "hunter2"}),
            ("clarify.respond", {"session_id": "r1", "request_id": "q1", "answer": "x"}),
        ]
        closed = r.seen.of("on_approval_closed")
        assert [rid for _, rid in closed] == ["a1", "p1", "q1"]
        # A password is sent, never kept: not in the local store.
        with closing(sqlite3.connect(tmp_path / "hermes-qt.sqlite3")) as on_disk:
            dump = "\n".join(on_disk.iterdump())
        assert "hunter2" not in dump


async def test_the_busy_chats_are_the_running_and_the_asking_ones_in_list_order(
    tmp_path: Path,
) -> None:
    # What the running strip and the tabs' dots show; asked at every turn's start and end,
    # so the controller names them without a pass over the whole list.
    async with rig(tmp_path, seed=two_chats) as r:
        r.gw.runtime_of.update(s1="r1", s2="r2")
        await r.online()
        for key in ("s1", "s2"):
            r.ctl.open_session(key)
        await settle(lambda: len(r.seen.of("on_session_messages")) >= 2, "both open")
        assert r.ctl.busy_keys() == []
        r.emit("message.start", "r2")
        await settle(lambda: r.ctl.busy_keys() == ["s2"], "s2 running")
        r.emit("approval.request", "r1", command="rm -r build", request_id="a1")
        await settle(lambda: r.ctl.busy_keys() == ["s1", "s2"], "s1 asking, newer first")
        r.ctl.respond("s1", "a1", "once")
        r.emit("message.complete", "r2", text="done")
        await settle(lambda: r.ctl.busy_keys() == [], "neither busy")


async def test_what_the_window_shows_of_a_chat_is_asked_of_the_controller_under_either_key(
    tmp_path: Path,
) -> None:
    # The window keeps no copy: requests, model and list marks come from here, also under
    # the local key a new chat had before the gateway named it.
    async with rig(tmp_path) as r:
        await r.online()
        temp = r.ctl.create_session()
        await settle(lambda: r.ctl.sessions()[0].key == "s1", "created")
        r.emit("approval.request", "r1", command="chmod 777 x", request_id="a1")
        r.emit("clarify.request", "r1", question="Which?", choices=["x"], request_id="q1")
        r.emit("session.info", "r1", model="m-large", provider="openrouter")
        for key in (temp, "s1"):
            assert [q.request_id for q in r.ctl.pending_requests(key)] == ["a1", "q1"]
            assert r.ctl.session_info(key).model == "m-large"
        r.ctl.respond("s1", "a1", "once")
        assert [q.request_id for q in r.ctl.pending_requests(temp)] == ["q1"]
        assert r.ctl.pending_requests("nowhere") == []
        r.ctl.view_session("main", temp)
        r.ctl.view_session("main", "elsewhere")  # s1 is no longer on screen: its reply is unread
        r.emit("message.complete", "r1", text="done")
        summary = r.ctl.summary(temp)
        assert summary is not None and (summary.key, summary.unread) == ("s1", 1)
        assert r.ctl.unread() == 1


# -- errors: where they come from --------------------------------------------------------------


async def test_a_disk_error_in_the_routers_own_reconnect_job_reaches_the_user(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, seed=two_chats) as r:
        r.ctl.open_session("s2")
        r.ctl.open_session("s1")  # offline: the router re-attaches both once connected
        # s1 was reaped while detached: the gateway resumes it under a new runtime id, which
        # the router's own reconnect job stores, on a disk that has just filled up.
        r.gw.runtime_of.update(s1="r7", s2="r2")

        def reaped(method: str, params: dict[str, Any]) -> Any:
            if method == "session.activate" and params["session_id"] == "r1":
                return RpcError(SESSION_NOT_FOUND, "session not found", method=method)
            return r.gw.handle(method, params)

        def full(profile_id: str, key: str, **fields: Any) -> None:
            if fields.get("runtime_id") == "r7":
                raise StorageFullError("could not save the session: the disk is full")
            healthy(profile_id, key, **fields)

        r.net.handler = reaped
        healthy = r.store.upsert_session
        r.store.upsert_session = full  # type: ignore[method-assign]
        await r.online()
        await settle(lambda: bool(r.seen.of("on_notice")), "the disk error told")
        assert r.seen.of("on_notice") == [("s1", "could not save the session: the disk is full")], (
            "told once, on the chat it concerns; not taken for a connection error"
        )
        # The other chat was re-attached all the same, and nothing is retried behind the
        # user's back: one resume, no reconnect.
        assert r.router.runtime_id("s2") == "r2" and r.router.runtime_id("s1") == "r7"
        assert len(r.gw.calls("session.resume")) == 1
        assert r.ctl.diagnostics().reconnects == ()
        r.store.upsert_session = healthy  # type: ignore[method-assign]


async def test_a_disk_error_reaches_the_user_while_a_busy_gateway_is_retried_quietly(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        r.gw.runtime_of["s1"] = "r1"
        r.ctl.open_session("s1")
        r.ctl.send("s1", "first", ())
        r.ctl.send("s1", "second", ())  # offline: both wait in the outbox
        second = user_bubbles(r.ctl.open_session("s1"))[1]

        def read_only(*_: Any) -> Any:
            raise StorageReadOnlyError("could not delete the prompt: the disk is read-only")

        healthy = r.store.outbox_delete
        r.store.outbox_delete = read_only  # type: ignore[method-assign]
        r.ctl.discard(second.id)
        # The disk error is told, not taken for a connection error and swallowed: the prompt
        # is still queued, so its bubble stays on screen.
        assert r.seen.of("on_notice") == [
            (
                "s1",
                "could not discard the message: could not delete the prompt: the disk is read-only",
            )
        ]
        assert [m.text for m in user_bubbles(r.ctl.open_session("s1"))] == ["first", "second"]
        r.store.outbox_delete = healthy  # type: ignore[method-assign]

        # A gateway error on the other hand is retried without a word to the user.
        busy = [RpcError(4009, "session busy", method="prompt.submit")]

        def busy_once(method: str, params: dict[str, Any]) -> Any:
            if method == "prompt.submit" and busy:
                return busy.pop()
            return r.gw.handle(method, params)

        r.net.handler = busy_once
        r.gw.runs_turns = True  # "second" waits for the turn of "first" to end
        await r.online()
        await settle(lambda: not busy, "the first attempt refused")
        await r.outbox.idle()
        assert len(r.gw.calls("prompt.submit")) == 1, "nothing more until the retry is due"
        r.clock.advance(1.0)  # the outbox's first retry delay
        await settle(lambda: len(r.gw.calls("prompt.submit")) == 3, "both prompts sent")
        await r.outbox.idle()
        assert [p["text"] for p in r.gw.calls("prompt.submit")] == ["first", "first", "second"]
        assert len(r.seen.of("on_notice")) == 1, "the busy gateway was not reported"
        shown = user_bubbles(r.ctl.open_session("s1"))
        assert [(m.text, m.delivery) for m in shown] == [
            ("first", DeliveryState.CONFIRMED),
            ("second", DeliveryState.CONFIRMED),
        ]


async def test_the_list_preview_is_the_last_message_live_and_after_a_restart(
    tmp_path: Path,
) -> None:
    """The preview once switched between the last reply (written live) and the gateway's own
    preview (the last prompt on the embedded gateway, the first message on Hermes) after a
    restart's session.list. One rule now: the last message this client has of the chat; the
    gateway's preview only for a chat whose messages it never had."""
    for gateway_preview in ("second question", "first question"):
        folder = tmp_path / gateway_preview.split()[0]
        folder.mkdir()
        listed = [
            {"id": "s1", "title": "Chat", "preview": gateway_preview, "message_count": 4},
            {"id": "s9", "title": "Phone", "preview": "asked on the phone", "message_count": 2},
        ]
        async with rig(folder, seed=one_chat) as r:
            r.gw.runtime_of["s1"] = "r1"
            r.gw.runs_turns = True
            r.gw.listing = listed
            r.ctl.open_session("s1")
            await r.online()
            await settle(lambda: any(s.key == "s9" for s in r.ctl.sessions()), "listed")
            assert r.summary("s9").preview == "asked on the phone", "never had here: the gateway's"
            for question in ("first question", "second question"):
                r.ctl.send("s1", question, ())
                assert r.summary("s1").preview == question, "while it runs: the prompt"
                # The turn ends and is cached TURN_CACHE_DELAY later (after its last frame).
                await settle(
                    lambda: r.clock.advance(TURN_CACHE_DELAY) or r.summary("s1").preview == "ok",
                    "then: the reply",
                )
                assert not r.summary("s1").running
        async with rig(folder) as again:
            assert again.summary("s1").preview == "ok", "from the store: the same"
            again.gw.listing = [*listed, {"id": "s10", "title": "New", "preview": "hi"}]
            await again.online()
            await settle(lambda: any(s.key == "s10" for s in again.ctl.sessions()), "listed")
            assert again.summary("s1").preview == "ok", "after the restart's list: the same"


async def test_an_export_or_a_search_right_after_a_turn_has_its_reply(tmp_path: Path) -> None:
    """A turn is cached TURN_CACHE_DELAY after it ended: an export or a search in between
    reads the cache, and got the reply as it streamed (or none)."""
    async with rig(tmp_path, seed=one_chat) as r:
        r.gw.runtime_of["s1"] = "r1"
        r.gw.runs_turns = True
        r.ctl.open_session("s1")
        await r.online()
        r.ctl.send("s1", "a question", ())
        await settle(lambda: len(r.gw.calls("prompt.submit")) == 1, "sent")
        await settle(lambda: r.ctl._index._after_turn != {}, "the turn ended")
        assert [hit.session_key for hit in r.ctl.search_hits("ok")] == ["s1"]
        r.ctl.send("s1", "another", ())
        await settle(lambda: len(r.gw.calls("prompt.submit")) == 2, "sent again")
        await settle(lambda: r.ctl._index._after_turn != {}, "the turn ended again")
        r.ctl.export_session("s1", str(tmp_path / "chat.md"))
        exported = (tmp_path / "chat.md").read_text(encoding="utf-8")
        assert exported.count("### Assistant") == 2 and "(streaming)" not in exported


# -- regenerate where the gateway cannot replace ---------------------------------------------


async def test_regenerate_says_so_when_the_gateways_history_keeps_the_earlier_reply(
    tmp_path: Path,
) -> None:
    """Its rows do not show the prompt as sent (no cut can be aimed), and its session.undo
    leaves them: the reply is replaced here, and the user is told what the agent still sees."""
    async with rig(tmp_path, seed=one_chat) as r:
        shown = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a1"}]
        listed = [{"role": "user", "content": "[q]"}, {"role": "assistant", "content": "a1"}]
        base = r.gw.handle

        def handle(method: str, params: dict[str, Any]) -> Any:
            if method in ("session.activate", "session.resume"):
                return {"session_id": "r1", "messages": list(shown), "running": False}
            if method == "session.history":
                return {"count": len(listed), "messages": list(listed)}
            if method == "session.undo":
                return {"removed": 0}
            return base(method, params)

        r.net.handler = handle
        r.ctl.open_session("s1")
        await r.online()
        await settle(lambda: bool(r.seen.of("on_session_messages")), "s1 shown")
        conv = r.router.conversation("s1")
        assert conv is not None
        await settle(lambda: len(conv.messages) == 2, "the turn")
        assert r.ctl.regenerate("s1", conv.messages[-1].id)
        await settle(lambda: bool(r.gw.calls("prompt.submit")), "sent again")
        [submit] = r.gw.calls("prompt.submit")
        assert not any(k.startswith("truncate") for k in submit), "no cut aimed at another row"
        said = [args[1] for args in r.seen.of("on_notice")]
        assert any("agent still sees it" in text for text in said), said


# -- opening a chat at start -----------------------------------------------------------------


async def test_a_chat_opened_offline_shows_its_cache_read_once(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The chat reopened at a start is shown from the cache before the gateway answers; its
    cached messages are read once for the window and its conversation."""
    from desktop.core.disk.store import CachedMessage, MessageRow

    def cached(store: Store) -> None:
        one_chat(store)
        rows = [CachedMessage(i, "user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(6)]
        store.replace_messages("p", "s1", rows, from_idx=0)

    async with rig(tmp_path, seed=cached) as r:
        reads: list[str] = []
        rows = r.store.message_rows  # what Store.messages reads through too

        def counted(profile_id: str, key: str, **page: Any) -> list[MessageRow]:
            reads.append(key)
            return rows(profile_id, key, **page)

        monkeypatch.setattr(r.store, "message_rows", counted)
        shown = r.ctl.open_session("s1")
        assert [m.text for m in shown] == [f"m{i}" for i in range(6)]
        await settle(lambda: r.router.session("s1") is not None, "followed")
        conv = r.router.conversation("s1")
        assert conv is not None and [m.text for m in conv.messages] == [m.text for m in shown]
        assert reads == ["s1"]


LONG = 3000  # cached messages of a long chat: more than a reader far up holds at once


def long_chat(store: Store) -> None:
    """Seed: chat s1 with LONG cached messages, prompts and replies taking turns."""
    from desktop.core.disk.store import CachedMessage

    one_chat(store)
    roles = ("user", "assistant")
    rows = [CachedMessage(i, roles[i % 2], f"m{i}", created_at=float(i)) for i in range(LONG)]
    store.replace_messages("p", "s1", rows)


async def test_a_long_chat_opened_offline_reads_one_page_of_its_cache_for_its_first_screen(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Whatever its length, the chat reopened at a start shows its newest page from the
    cache before the gateway answers: its other cached rows are not read for it."""
    from desktop.core.chats.router import HISTORY_WINDOW
    from desktop.core.disk.store import MessageRow

    async with rig(tmp_path, seed=long_chat) as r:
        read: list[int] = []
        rows = r.store.message_rows

        def counted(profile_id: str, key: str, **page: Any) -> list[MessageRow]:
            got = rows(profile_id, key, **page)
            read.append(len(got))
            return got

        monkeypatch.setattr(r.store, "message_rows", counted)
        shown = r.ctl.open_session("s1")
        assert sum(read) <= HISTORY_WINDOW, f"rows read to open it: {read}"
        assert [m.text for m in shown] == [f"m{i}" for i in range(LONG - HISTORY_WINDOW, LONG)]


class Shown:
    """What a chat view holds of s1, kept as the listener calls tell it."""

    def __init__(self, messages: list[ChatMessage]) -> None:
        self.rows = list(messages)
        self.most = len(self.rows)

    def take(self, calls: list[tuple[str, tuple[Any, ...]]]) -> None:
        for name, args in calls:
            if name == "on_session_messages":
                self.rows = list(args[1])
            elif name == "on_messages_prepended":
                self.rows[0:0] = args[1]
            elif name == "on_messages_appended":
                self.rows += args[1]
            elif name == "on_messages_dropped":
                _key, count, newest = args
                self.rows = self.rows[:-count] if newest else self.rows[count:]
        self.most = max(self.most, len(self.rows))  # once the page's calls are taken

    def texts(self) -> list[str]:
        return [m.text for m in self.rows]


async def test_scrolling_up_a_chat_opened_offline_shows_every_earlier_message_and_back(
    tmp_path: Path,
) -> None:
    """Offline, the older pages come from the cache as they do from the gateway: up to the
    first message, a bounded window far up, and down again to the newest."""
    from desktop.core.chats.router import HISTORY_HELD, HISTORY_PAGE

    async with rig(tmp_path, seed=long_chat) as r:
        view = Shown(r.ctl.open_session("s1"))
        conv = r.router.conversation("s1")
        assert conv is not None
        every = [f"m{i}" for i in range(LONG)]
        steps = 0
        while not view.texts() or view.texts()[0] != "m0":
            steps += 1
            assert steps < LONG, "scrolling up never reached the first message"
            seen = len(r.seen.calls)
            r.ctl.load_older("s1")
            await settle(lambda s=seen: len(r.seen.calls) > s, "an older page")  # type: ignore[misc]
            view.take(r.seen.calls[seen:])
            texts = view.texts()
            first = every.index(texts[0])
            assert texts == every[first : first + len(texts)], "in order, none missing"
        assert conv.detached, "far up, the newest messages were let go"
        while conv.detached:
            seen = len(r.seen.calls)
            r.ctl.load_newer("s1")
            await settle(lambda s=seen: len(r.seen.calls) > s, "a newer page")  # type: ignore[misc]
            view.take(r.seen.calls[seen:])
        texts = view.texts()
        assert texts == every[-len(texts) :], "down again to the newest, in order"
        assert view.most <= HISTORY_HELD + HISTORY_PAGE, "a bounded window all the way"
        assert not r.port.is_online(), "all of it offline, from the cache"
