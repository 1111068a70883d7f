"""OnlineCatchUp: what a profile does once its sessions are re-attached after a connect."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.core.controller_rig import rig, settle


async def test_a_long_session_list_is_fetched_in_growing_pages_until_all_are_listed(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        r.gw.listing = [
            {"id": f"s{n:04d}", "title": f"Chat {n}", "updated_at": float(10_000 - n)}
            for n in range(1_200)
        ]

        def paged(method: str, params: dict[str, Any]) -> Any:
            if method == "session.list":
                return {"sessions": r.gw.listing[: params["limit"]]}
            return r.gw.handle(method, params)

        r.net.handler = paged
        await r.online()
        await settle(lambda: len(r.ctl.sessions()) == 1_200, "every session listed")
        await settle(lambda: len(r.gw.calls("session.list")) == 3, "the last page asked for")

        # The first screenful comes at once; the rest of a long history follows in pages
        # growing fivefold, and a page shorter than asked for ends it.
        assert [c["limit"] for c in r.gw.calls("session.list")] == [200, 1_000, 5_000]
        assert r.ctl.sessions()[0].title == "Chat 0"
        assert r.seen.of("on_sessions")[-1][0][-1].title == "Chat 1199"


async def test_a_session_list_answered_for_an_older_connection_is_not_shown(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        late: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def slow_list(method: str, params: dict[str, Any]) -> Any:
            if method == "session.list" and not late.done():
                return late
            return r.gw.handle(method, params)

        r.net.handler = slow_list
        await r.online()
        await settle(lambda: bool(r.gw.calls("session.list")), "the list asked for")
        r.net.clients[-1].drop("test: link dropped")
        await settle(lambda: not r.port.is_online(), "the drop noticed")
        r.clock.advance(30.0)  # past any reconnect delay
        await settle(lambda: len(r.gw.calls("session.list")) == 2, "the list asked again")
        await settle(r.port.is_online, "online again")
        # The old connection's answer comes in last: it speaks of a state since replaced.
        late.set_result({"sessions": [{"id": "ghost", "title": "Deleted meanwhile"}]})
        await settle(lambda: bool(r.seen.of("on_sessions")), "the list shown")
        await r.outbox.idle()

        assert "ghost" not in [s.key for s in r.ctl.sessions()]


async def test_after_a_connect_new_chats_are_created_before_their_prompts_go_out(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        temp = r.ctl.create_session()
        r.ctl.send(temp, "typed offline", ())
        await r.online()
        await settle(lambda: len(r.gw.calls("prompt.submit")) == 1, "prompt sent")
        await settle(lambda: bool(r.gw.calls("session.list")), "list refreshed")

        methods = [m for m, _ in r.net.calls if m in ("session.create", "prompt.submit")]
        assert methods == ["session.create", "prompt.submit"]
        assert r.gw.calls("prompt.submit")[0]["session_id"] == "r1"


async def test_sessions_changed_refreshes_the_list_once_for_a_burst(tmp_path: Path) -> None:
    """Hermes 0.22 broadcasts `sessions.changed` (session_id "", payload {}) when its session
    store moved: a session another client made shows without this app asking on its own."""
    async with rig(tmp_path) as r:
        await r.online()
        await settle(lambda: len(r.gw.calls("session.list")) == 1, "the list after connect")
        r.gw.listing = [{"id": "other-1", "title": "Made elsewhere", "updated_at": 5.0}]
        for _ in range(5):
            r.net.clients[-1].emit("sessions.changed", "", None)
        await settle(lambda: r.clock.pending > 0, "the debounce timer set")
        assert len(r.gw.calls("session.list")) == 1  # gathered, not one call per signal
        r.clock.advance(1.0)
        await settle(lambda: "other-1" in [s.key for s in r.ctl.sessions()], "listed")
        assert len(r.gw.calls("session.list")) == 2
        assert r.seen.of("on_sessions")[-1][0][0].title == "Made elsewhere"
