"""Delete and rename over a scripted gateway: the id each method takes, and refusals told.

Hermes' facts (0.19, 0.20.1, 0.22 alike): `session.delete` takes the stored id and refuses a
session still loaded in the gateway with 4023; `session.title` takes the runtime id. The real
gateways are driven by tests/core/test_hermes_chats.py; these pin each branch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop.common.codes import SESSION_LIVE
from desktop.core.disk.store import Store
from desktop.core.errors import RpcError
from tests.core.controller_rig import Rig, one_chat, rig, settle


def admin_calls(r: Rig) -> list[tuple[str, dict[str, Any]]]:
    names = ("session.close", "session.delete", "session.title", "session.resume")
    return [(m, p) for m, p in r.net.calls if m in names]


def notices(r: Rig) -> list[str]:
    return [text for _, text in r.seen.of("on_notice")]


async def opened(r: Rig, key: str = "s1") -> None:
    r.ctl.open_session(key)
    await settle(lambda: r.attached(key), f"{key} resumed")


async def test_an_open_idle_chat_is_closed_then_deleted_by_its_stored_id(tmp_path: Path) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        r.gw.runtime_of["s1"] = "r1"
        await r.online()
        await opened(r)

        r.ctl.delete_session("s1")
        await settle(lambda: r.ctl.sessions() == [], "gone from the list")

        assert admin_calls(r)[-2:] == [
            ("session.close", {"session_id": "r1"}),
            ("session.delete", {"session_id": "s1"}),
        ]
        assert r.seen.of("on_sessions")[-1] == ([],)
        assert r.store.session("p", "s1") is None
        assert r.router.runtime_id("s1") is None  # not reloaded on the next reconnect


async def test_a_chat_never_opened_is_deleted_by_its_stored_id_too(tmp_path: Path) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        await r.online()
        r.ctl.delete_session("s1")
        await settle(lambda: r.ctl.sessions() == [], "gone from the list")
        assert admin_calls(r) == [("session.delete", {"session_id": "s1"})]


async def test_a_deleted_chat_stays_gone_when_an_older_list_comes_back(tmp_path: Path) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        await r.online()
        r.ctl.delete_session("s1")
        await settle(lambda: r.ctl.sessions() == [], "gone from the list")
        # A list the gateway sent before it deleted s1, applied after (a reconnect's refresh).
        r.gw.listing = [{"id": "s1", "title": "Chat"}, {"id": "s9", "title": "Other"}]
        epoch = r.ctl.status().epoch
        r.net.clients[-1].drop()
        r.ctl.reconnect_now()
        await settle(lambda: r.ctl.status().epoch > epoch and r.port.is_online(), "reconnected")
        await settle(lambda: any(s.key == "s9" for s in r.ctl.sessions()), "that list merged")
        assert [s.key for s in r.ctl.sessions()] == ["s9"]


async def test_a_running_chat_is_not_deleted_and_the_user_is_told_why(tmp_path: Path) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        r.gw.runtime_of["s1"] = "r1"
        await r.online()
        await opened(r)
        r.emit("message.start", "r1")
        r.ctl.delete_session("s1")
        assert [s.key for s in r.ctl.sessions()] == ["s1"]
        assert notices(r) == ["“Chat” is still running; stop it first, then delete it."]
        assert admin_calls(r) == [("session.resume", {"session_id": "s1", "omit_messages": True})]


async def test_offline_nothing_is_deleted_that_the_next_list_would_bring_back(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        r.ctl.delete_session("s1")
        assert [s.key for s in r.ctl.sessions()] == ["s1"]
        assert notices(r) == ["“Chat” can be deleted once connected to the gateway."]
        assert r.net.calls == []


def refuse_first_delete(r: Rig, *, running: bool) -> None:
    """The gateway holds s1 loaded as r5 (another client, or an earlier run): 4023 once."""
    plain = r.gw.handle
    refused: list[bool] = []

    def handler(method: str, params: dict[str, Any]) -> Any:
        if method == "session.delete" and not refused:
            refused.append(True)
            return RpcError(SESSION_LIVE, "cannot delete an active session", method=method)
        if method == "session.resume":
            return {"session_id": "r5", "messages": [], "running": running}
        return plain(method, params)

    r.net.handler = handler


async def test_a_chat_loaded_elsewhere_and_idle_is_closed_there_then_deleted(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        await r.online()
        refuse_first_delete(r, running=False)
        r.ctl.delete_session("s1")
        await settle(lambda: r.ctl.sessions() == [], "gone from the list")
        assert admin_calls(r) == [
            ("session.delete", {"session_id": "s1"}),
            ("session.resume", {"session_id": "s1", "omit_messages": True}),
            ("session.close", {"session_id": "r5"}),
            ("session.delete", {"session_id": "s1"}),
        ]
        assert notices(r) == []


async def test_a_chat_running_elsewhere_stays_listed_with_the_reason(tmp_path: Path) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        await r.online()
        refuse_first_delete(r, running=True)
        r.ctl.delete_session("s1")
        await settle(lambda: bool(notices(r)), "told")
        assert notices(r) == [
            "“Chat” is still running on the gateway; stop it first, then delete it."
        ]
        assert [s.key for s in r.ctl.sessions()] == ["s1"]
        assert r.store.session("p", "s1") is not None
        assert "session.close" not in [m for m, _ in admin_calls(r)]


async def test_rename_sends_the_runtime_id_of_an_open_chat(tmp_path: Path) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        r.gw.runtime_of["s1"] = "r1"
        await r.online()
        await opened(r)
        r.ctl.rename_session("s1", "Quokka facts")
        await settle(lambda: bool(r.gw.calls("session.title")), "renamed remotely")
        assert r.gw.calls("session.title") == [{"session_id": "r1", "title": "Quokka facts"}]
        assert r.summary("s1").title == "Quokka facts"


async def test_rename_of_a_chat_not_open_learns_its_runtime_id_first(tmp_path: Path) -> None:
    def seed(store: Store) -> None:
        store.upsert_session("p", "s1", title="Chat")  # no runtime id known

    async with rig(tmp_path, seed=seed) as r:
        r.gw.runtime_of["s1"] = "r7"
        await r.online()
        r.ctl.rename_session("s1", "Quokka facts")
        await settle(lambda: bool(r.gw.calls("session.title")), "renamed remotely")
        assert r.gw.calls("session.title") == [{"session_id": "r7", "title": "Quokka facts"}]


async def test_a_refused_name_is_put_back_and_told(tmp_path: Path) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        r.gw.runtime_of["s1"] = "r1"
        await r.online()
        await opened(r)
        plain = r.gw.handle

        def handler(method: str, params: dict[str, Any]) -> Any:
            if method == "session.title":
                return RpcError(4022, "title already in use", method=method)
            return plain(method, params)

        r.net.handler = handler
        r.ctl.rename_session("s1", "Taken")
        await settle(lambda: bool(notices(r)), "told")
        assert r.summary("s1").title == "Chat"
        assert notices(r) == [
            "“Chat” could not be renamed: the gateway refused the name (title already in use)"
        ]


async def test_offline_a_rename_is_refused_not_kept_until_the_list_undoes_it(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path, seed=one_chat) as r:
        r.ctl.rename_session("s1", "Quokka facts")
        assert r.summary("s1").title == "Chat"
        assert notices(r) == ["“Chat” can be renamed once connected to the gateway."]
