"""Against real Hermes 0.19.0, 0.20.1.2 and 0.22.2: a chat reopened after a restart opens with
its newest cached page only, and once the gateway's whole history comes, its earlier turns,
older than that page, keep what only the cache had: a tool call's output and the turn's time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop.core.disk.store import CachedMessage
from desktop.core.models import ChatMessage, Role
from desktop.core.profile import feed
from tests.reliability.test_hermes_history import (
    TURNS,
    app_folders,
    line,
    proxy_url,
    start_app,
    two_turns,
)
from tests.support.hermes_env import HERMES_019, HERMES_0201, HERMES_022, HermesDist, line_params

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(300)]

# The newest page a chat opens with, here only the last turn: the first turn (its reply with a
# `terminal` call) is older than it.
PAGE = 2


def first_reply(messages: list[ChatMessage]) -> tuple[list[tuple[str, str]], float | None]:
    """The first reply's tool calls (name, output) and its turn's time."""
    reply = next(m for m in messages if m.role is Role.ASSISTANT)
    return [(t.name, t.output) for t in reply.tools], reply.duration


def kept(rows: list[CachedMessage]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """What the cache keeps of each message but its place and time: once the gateway's
    history came, those are its rows' (a reply's rows counted, a prompt's row's time)."""
    return [(r.role, r.text, r.status, r.extra) for r in rows]


@pytest.mark.parametrize("dist", line_params(HERMES_019, HERMES_0201, HERMES_022))
async def test_an_earlier_turn_keeps_its_tool_output_and_time_after_a_restart(
    tmp_path: Path, dist: HermesDist, monkeypatch: Any
) -> None:
    data, folder = app_folders(tmp_path)
    async with line(tmp_path, dist) as (fake, gw, proxy):
        url = proxy_url(proxy)
        app = start_app(data, url, gw.token)
        try:
            await app.until(lambda: app.synced, "online", 60)
            key = await two_turns(app, fake, folder)
            conv = app.router.conversation(key)
            assert conv is not None
            tools, took = first_reply(conv.messages)
            assert any(output for _name, output in tools) and took is not None, (tools, took)
            cached = kept(app.store.messages("p", key))
        finally:
            await app.close()

        monkeypatch.setattr(feed, "HISTORY_WINDOW", PAGE)
        app = start_app(data, url, gw.token)
        try:
            await app.until(lambda: app.synced, "online again", 60)
            opened = app.ctl.open_session(key)
            assert [(m.role, m.text) for m in opened] == TURNS[-PAGE:], "its newest page"
            await app.until(lambda: key in app.snapshots, "the reopened chat's history", 60)
            conv = app.router.conversation(key)
            assert conv is not None
            assert app.shown(key) == TURNS, "every turn shown"
            assert first_reply(conv.messages) == (tools, took), "what only the cache had"
            assert kept(app.store.messages("p", key)) == cached, "cached as it was"
        finally:
            await app.close()
