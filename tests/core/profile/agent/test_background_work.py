"""BackgroundWork's asks: a chat opened in this run has its processes asked (and again after
each snapshot), a chat only re-attached is not asked (a reconnect of many chats costs no more
calls per chat), and a gateway without process.list is asked once per connection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop.core.disk.store import Store
from desktop.core.errors import RpcError
from tests.core.controller_rig import rig, settle

PROC = {"session_id": "proc_1", "command": "sleep 300", "pid": 7, "status": "running"}


def _two(store: Store) -> None:
    store.upsert_session("p", "s1", runtime_id="r1", title="One")
    store.upsert_session("p", "s2", runtime_id="r2", title="Two")


async def test_only_a_chat_opened_has_its_processes_asked(tmp_path: Path) -> None:
    async with rig(tmp_path, seed=_two) as r:
        answer = r.net.handler

        def with_processes(method: str, params: dict[str, Any]) -> Any:
            if method == "process.list":
                return {"processes": [PROC]}
            return answer(method, params)

        r.net.handler = with_processes
        r.gw.runtime_of.update(s1="r1", s2="r2")
        r.router.route("s2", "r2")  # followed (re-attached on connect), never opened
        r.ctl.open_session("s1")
        await r.online()
        await settle(lambda: bool(r.ctl.session_info("s1").processes), "s1's process listed")
        assert r.ctl.session_info("s1").processes[0].command == "sleep 300"
        assert any(p.get("session_id") == "r2" for p in r.gw.calls("session.activate")), (
            "s2 was re-attached (it had a snapshot)"
        )
        asked = [p.get("session_id") for p in r.gw.calls("process.list")]
        assert "r2" not in asked and "r1" in asked


async def test_a_gateway_without_process_list_is_asked_once(tmp_path: Path) -> None:
    async with rig(tmp_path, seed=_two) as r:
        answer = r.net.handler

        def no_processes(method: str, params: dict[str, Any]) -> Any:
            if method == "process.list":
                return RpcError(-32601, "unknown method: process.list", method=method)
            return answer(method, params)

        r.net.handler = no_processes
        r.gw.runtime_of.update(s1="r1", s2="r2")
        r.ctl.open_session("s1")
        await r.online()
        await settle(lambda: bool(r.gw.calls("process.list")), "asked")
        r.ctl.open_session("s2")
        r.ctl.refresh_processes("s1")
        await settle(lambda: r.attached("s2"), "s2 attached")  # processes would be asked now
        assert len(r.gw.calls("process.list")) == 1
        assert r.ctl.work_support()[1].startswith("This gateway does not list")


async def test_a_new_chat_opened_before_the_gateway_made_it_is_asked_too(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        answer = r.net.handler

        def with_processes(method: str, params: dict[str, Any]) -> Any:
            if method == "process.list":
                return {"processes": [PROC]}
            return answer(method, params)

        r.net.handler = with_processes
        await r.online()
        temp = r.ctl.create_session()
        r.ctl.open_session(temp)  # the window shows it at once, under its temporary key
        r.ctl.send(temp, "start a server", ())
        await settle(lambda: bool(r.seen.of("on_session_key_changed")), "created")
        real = str(r.seen.of("on_session_key_changed")[-1][1])
        await settle(lambda: bool(r.ctl.session_info(real).processes), "its process listed")
