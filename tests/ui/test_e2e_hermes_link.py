"""End to end on real Hermes lines (0.19.0, 0.20.1, 0.22.2): a reply streaming when the link goes
says so under its words, not only in the header, and is whole once the link is back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from desktop.core.models import ChatMessage, Role
from tests.core.test_hermes_chats import NO_AUTO_TITLE
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.fault_proxy import proxy_to
from tests.support.hermes_env import (
    HERMES_019,
    HERMES_0201,
    HERMES_022,
    HermesDist,
    hermes_gateway,
    line_params,
    require_hermes,
)
from tests.ui.e2e_support import App, until, use_remote_gateway
from tests.ui.settings_support import keep_loop  # noqa: F401 (fixture)

pytestmark = [
    pytest.mark.hermes,
    pytest.mark.slow,
    pytest.mark.usefixtures("keep_loop"),
    pytest.mark.timeout(400),
]

WAIT = 180.0  # hermes serve imports a large agent on first start
PID = "h"
ESSAY = " ".join(f"word{i}" for i in range(400))


def _reply(app: App) -> ChatMessage:
    [reply] = app.bubbles(Role.ASSISTANT)
    return reply


def _says_it_waits(app: App) -> bool:
    """Whether the reply's bubble, as laid out and drawn now, carries the waiting line."""
    view = app.window.chat_view
    view.chat_model.flush()
    row = view.chat_model.row_of(_reply(app).id)
    assert row is not None
    return view.bubbles.layout_for(view.chat_model.index(row)).waiting.startswith(
        "Not connected: reconnecting"
    )


@pytest.mark.parametrize("dist", line_params(HERMES_019, HERMES_0201, HERMES_022))
async def test_a_reply_cut_off_by_the_link_says_it_waits_and_is_whole_once_it_is_back(
    qloop: Any, qtbot: Any, tmp_path: Path, dist: HermesDist
) -> None:
    require_hermes(dist)
    root = tmp_path / "app"
    with FakeOpenAIServer(reply="ok", chunk_size=6, chunk_delay=0.03) as fake:
        fake.script = [{"content": ESSAY}]
        async with hermes_gateway(
            tmp_path / "home", fake.base_url, dist, config_extra=NO_AUTO_TITLE
        ) as gw:
            with proxy_to(gw.url) as (proxy, url):
                use_remote_gateway(root, url, gw.token, pid=PID, name=f"Hermes {dist.version}")
                app = App.open(root, qtbot)
                win = app.window
                ctl = app.controllers[PID]
                try:
                    win.switch_profile(PID)
                    await until(ctl.is_online, "online", WAIT)
                    app.type_and_send(qtbot, "Write a long essay")
                    await until(
                        lambda: any("word20" in m.text for m in app.bubbles(Role.ASSISTANT)),
                        "streaming",
                        WAIT,
                    )
                    assert not _says_it_waits(app)
                    proxy.set_mode("reset")  # the link goes and stays down
                    await until(lambda: not ctl.is_online(), "link down", 60)
                    assert _reply(app).streaming, "the reply is cut, not ended"
                    await until(lambda: _says_it_waits(app), "the reply says it waits", 5)
                    # The user's way back: the network returns, Retry in the header.
                    proxy.set_mode("pass")
                    button = win.connection.reconnect_button
                    assert button.isVisible()
                    QTest.mouseClick(button, Qt.MouseButton.LeftButton)
                    await until(ctl.is_online, "back", WAIT)
                    await until(
                        lambda: not _reply(app).streaming and "word399" in _reply(app).text,
                        "the reply whole",
                        WAIT,
                    )
                    assert not _says_it_waits(app)
                    assert _reply(app).text.split() == ESSAY.split()
                finally:
                    await app.close()
