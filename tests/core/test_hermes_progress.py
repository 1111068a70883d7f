"""Hermes 0.22's push events against the real 0.22.2 gateway, as the app's core shows them.

One gateway, one app run: a chat another client makes (a plain JsonRpcGatewayClient on the
same gateway) appears in the app's session list from `sessions.changed` alone (the app lists
only once per connect by itself); then a slow turn: `session.usage` ticks arrive while it runs
and the session's context percentage is known (the header's "context N %").
The tool round here calls `todo_list` directly, which 0.22 defers behind its tool-search bridge
(the agent answers "Tool 'todo_list' does not exist"): it only makes a second model call. The
real todo.updated path (`tool_call` -> todo_list) is proven in tests/ui/test_e2e_hermes_desk.py
and tests/core/test_hermes_background_work.py; payload shapes in
tests/core/chats/test_progress_events.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop.core.link.client import JsonRpcGatewayClient
from desktop.core.models import SessionInfo
from tests.core.test_hermes_chats import NO_AUTO_TITLE, app
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.hermes_env import HERMES_022, hermes_gateway, require_hermes

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(300)]


async def test_a_chat_made_elsewhere_is_listed_and_context_use_is_known_on_022(
    tmp_path: Path,
) -> None:
    require_hermes(HERMES_022)
    with FakeOpenAIServer(reply="ok", chunk_size=2) as fake:
        fake.script = [
            {"content": "the other client's answer"},
            # A tool round: the usage moves between the two model calls, so a tick goes out.
            {"content": "Let me plan.", "tool_calls": [("todo_list", {"todos": []})]},
            # Long enough (streamed slowly) for the gateway's 1 s usage ticker to fire.
            {"content": "All planned, and the first step is done. " * 3},
        ]
        async with (
            hermes_gateway(
                tmp_path / "home", fake.base_url, HERMES_022, config_extra=NO_AUTO_TITLE
            ) as gw,
            app(gw.url, gw.token, tmp_path) as a,
        ):
            types: list[str] = []
            a.sup.subscribe(lambda event, epoch: types.append(str(event.type)))
            infos: list[SessionInfo] = []
            record = a.seen.__getattr__("on_session_info")

            class Infos:
                def __getattr__(self, name: str) -> Any:
                    if name == "on_session_info":
                        return lambda key, info: (infos.append(info), record(key, info))
                    return lambda *args: None

            a.ctl.subscribe(Infos())  # type: ignore[arg-type]

            # 1. Another client makes a chat: the list shows it, the app never asked.
            other = JsonRpcGatewayClient(gw.url, token=gw.token)
            await other.connect()
            try:
                made = await other.call("session.create", {})
                stored = str(made["stored_session_id"])
                await other.call(
                    "prompt.submit", {"session_id": made["session_id"], "text": "hello"}
                )
                await a.until(lambda: stored in a.listed(), "listed by sessions.changed", 60)
            finally:
                await other.close()
            assert "sessions.changed" in types

            # 2. A turn streamed slowly: session.usage ticks while it runs, and the
            # header's context percentage is known once it ends.
            fake.chunk_delay = 0.05
            key = await a.chat("plan the release")
            conv = a.router.conversation(key)
            assert conv is not None
            assert "session.usage" in types, sorted(set(types))
            assert conv.messages[-1].text.startswith("All planned")
            info = a.ctl.session_info(key)
            assert info.activity == ""  # the turn is over: the status line went
            assert info.context_percent is not None and 0 <= info.context_percent <= 100
            assert any(i.context_percent is not None for i in infos)
            print("events:", sorted(set(types)), "context", info.context_percent)
