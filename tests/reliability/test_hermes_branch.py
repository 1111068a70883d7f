"""Branch from here on every real Hermes line (issue #27).

A chat with two turns (the first reply says "Let me look." before a `terminal` tool call, so
the gateway holds three rows with text where one bubble is shown) is branched from its first
reply: on 0.20.1, 0.21.5 and 0.22.2 the branch
holds the first turn only, on screen, in the local cache and on the gateway itself (resumed by
its stored id after an app restart); the chat it came from keeps both turns. Hermes 0.19 makes
a branch of the whole chat and does not say its stored id: the client says so in the new chat
instead of keeping a chat it could never resume.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.core.chats.router import BRANCH_NOT_KEPT
from desktop.core.models import Role
from tests.reliability.test_hermes_history import TURNS, line, start_app, two_turns
from tests.support.hermes_env import (
    HERMES_019,
    HERMES_0201,
    HERMES_0215,
    HERMES_022,
    HermesDist,
    line_params,
)

# Said by the first reply before its tool call: counted by the gateway, not a bubble of its own.
SAID_FIRST = "Let me look."

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(420)]


@pytest.mark.parametrize("dist", line_params(HERMES_0201, HERMES_022, HERMES_0215))
async def test_branch_from_the_first_reply_holds_the_first_turn_on_the_gateway_too(
    tmp_path: Path, dist: HermesDist
) -> None:
    data = tmp_path / "app"
    data.mkdir()
    folder = tmp_path / "folder"
    folder.mkdir()
    async with line(tmp_path, dist) as (fake, gw, _proxy):
        url = f"ws://127.0.0.1:{_proxy.port}/api/ws"
        app = start_app(data, url, gw.token)
        try:
            await app.until(lambda: app.synced, "online", 60)
            key = await two_turns(app, fake, folder, said_first=SAID_FIRST)
            conv = app.router.conversation(key)
            assert conv is not None
            reply = next(m for m in conv.messages if m.text == TURNS[1][1])
            temp = app.ctl.branch_session(key, reply.id)
            assert temp is not None
            await app.until(lambda: len(app.seen.keys) >= 2, "the branch made", 60)
            branch = app.seen.keys[-1]
            assert branch != key
            await app.until(lambda: app.shown(branch) == TURNS[:2], "the branch shown", 30)
            await app.until(lambda: app.cached(branch) == TURNS[:2], "the branch cached", 30)
            assert app.shown(key) == TURNS, "the chat branched from keeps both turns"
            assert any(s.key == branch for s in app.ctl.sessions())
            assert app.ctl.branch_available() == (True, ""), "still offered"
        finally:
            await app.close()
        # After a restart the branch is resumed from the gateway by its stored id.
        again = start_app(data, url, gw.token)
        try:
            await again.until(lambda: again.synced, "online again", 60)
            again.ctl.open_session(branch)
            await again.until(
                lambda: branch in again.snapshots, "the branch resumed from the gateway", 60
            )
            assert again.shown(branch) == TURNS[:2]
        finally:
            await again.close()


async def test_hermes_019_branch_without_a_stored_id_is_said_not_kept(tmp_path: Path) -> None:
    data = tmp_path / "app"
    data.mkdir()
    folder = tmp_path / "folder"
    folder.mkdir()
    async with line(tmp_path, HERMES_019) as (fake, gw, proxy):
        url = f"ws://127.0.0.1:{proxy.port}/api/ws"
        app = start_app(data, url, gw.token)
        told: list[tuple[str, str]] = []
        wake = app.seen.on_notice  # wakes whoever waits

        def on_notice(key: str, text: str) -> None:
            told.append((key, text))
            wake(key, text)

        app.seen.on_notice = on_notice  # type: ignore[method-assign]
        try:
            await app.until(lambda: app.synced, "online", 60)
            key = await two_turns(app, fake, folder)
            conv = app.router.conversation(key)
            assert conv is not None
            reply = next(m for m in conv.messages if m.role is Role.ASSISTANT)
            temp = app.ctl.branch_session(key, reply.id)
            assert temp is not None
            await app.until(lambda: any(k == temp for k, _t in told), "the limit said", 60)
            assert any("without saying its stored id" in t for _k, t in told), told
            # From now on the menu greys Branch from here with the reason.
            assert app.ctl.branch_available() == (False, BRANCH_NOT_KEPT)
        finally:
            await app.close()
