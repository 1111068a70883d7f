"""End to end on a real Hermes 0.20.1: a sent picture stays on its message after the app and
the gateway restart (Hermes' history rows name no local file), and opens on a click."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices

from desktop.core.models import ChatMessage, Role
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.hermes_env import HERMES_0201, hermes_gateway, require_hermes
from tests.ui.attachment_screenshots import chart_png
from tests.ui.e2e_support import App, until, use_remote_gateway
from tests.ui.settings_support import keep_loop  # noqa: F401 (fixture)
from tests.ui.test_e2e_attachments import _click_zone, _kept_copy

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.usefixtures("keep_loop")]

WAIT = 180.0  # hermes serve imports a large agent on first start
PROMPT = "what does this chart show?"


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer("Signups rise; June dips.") as fake:
        yield fake


def _prompt(app: App) -> ChatMessage | None:
    return next((m for m in app.bubbles(Role.USER) if PROMPT in m.text), None)


def _use_gateway(root: Path, url: str, token: str) -> None:
    use_remote_gateway(root, url, token, pid="h0201", name="Hermes 0.20.1")


async def _online(app: App) -> None:
    win = app.window
    win.profile_combo.setCurrentIndex(win.profile_combo.findData("h0201"))
    await until(app.controllers["h0201"].is_online, "Hermes 0.20.1 online", WAIT)


async def test_a_picture_sent_to_hermes_0201_is_on_its_message_after_both_restart(
    qloop: Any,
    qtbot: Any,
    tmp_path: Path,
    provider: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require_hermes(HERMES_0201)
    home, root = tmp_path / "hermes-home", tmp_path / "app"
    chart = tmp_path / "chart.png"
    chart.write_bytes(chart_png())
    async with hermes_gateway(home, provider.base_url, HERMES_0201) as gw:
        _use_gateway(root, gw.url, gw.token)
        app = App.open(root, qtbot)
        try:
            await _online(app)
            # 0.20.1 stages pictures (image.attach_bytes); it takes no other files.
            app.window.composer.attach_files([str(chart)])
            await until(lambda: len(app.window.composer.attachments) == 1, "a chip")
            app.type_and_send(qtbot, PROMPT)
            await until(lambda: len(app.finished_replies()) == 1, "the reply", WAIT)
            await until(lambda: app.user_confirmed(PROMPT), "the prompt confirmed")
            key = app.window.session_key
            assert key is not None
            # 0.20.1 saves the picture in its home and names it in the prompt's text (which
            # is the text of its history row too: the row is matched by containing the prompt).
            content = str(provider.requests[-1]["messages"][-1]["content"])
            assert content.startswith("[The user attached an image: ") and PROMPT in content
        finally:
            await app.close()
    chart_bytes = chart.read_bytes()
    chart.unlink()

    # The gateway restarts too (same Hermes home, a new process and port).
    opened: list[QUrl] = []
    monkeypatch.setattr(
        QDesktopServices, "openUrl", staticmethod(lambda url: opened.append(url) or True)
    )
    async with hermes_gateway(home, provider.base_url, HERMES_0201) as gw:
        _use_gateway(root, gw.url, gw.token)
        again = App.open(root, qtbot)
        try:
            await _online(again)
            again.window.open_session(key)
            await until(
                lambda: (
                    (m := _prompt(again)) is not None
                    and not m.id.startswith("local:")
                    and len(again.finished_replies()) == 1
                    and [a.filename for a in m.attachments] == ["chart.png"]
                ),
                "the prompt shows its picture after both restarts",
                WAIT,
            )
            prompt = _prompt(again)
            assert prompt is not None
            # Its row reads "<prompt>\n@image:<Hermes' own copy>": shown as the user sent it.
            assert prompt.text == PROMPT
            previews = again.window.chat_view.render_cache.docs.previews
            assert previews.get(prompt.attachments[0]).pixmap is not None, "a thumbnail"
            _click_zone(again, prompt, 0)
            assert len(opened) == 1
            assert _kept_copy(opened[0], again.paths.data) == chart_bytes
        finally:
            await again.close()
