"""End to end on the embedded gateway (no session.branch, no session.steer): its ready frame
lists the methods it serves, so Branch from here is greyed in the message menu with the reason
from the start, its shortcut says so instead of trying, and Steer is not offered."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from desktop.core.chats.router import BRANCH_NOT_SERVED
from desktop.core.profile.agent.steering import NOT_SERVED as STEER_NOT_SERVED
from desktop.ui.chat.view import ChatView
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.e2e_support import App, until, use_fake_provider

pytestmark = pytest.mark.slow


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer("A quokka.") as fake:
        yield fake


async def test_branch_from_here_is_greyed_and_steer_hidden_on_the_embedded_gateway(
    qloop: Any,
    qtbot: Any,
    tmp_path: Path,
    provider: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    menus: list[list[tuple[str, bool, str]]] = []

    def exec_menu(cls: Any, menu: QMenu, pos: QPoint) -> QAction | None:
        menus.append([(a.text(), a.isEnabled(), a.toolTip()) for a in menu.actions()])
        return None

    monkeypatch.setattr(ChatView, "exec_menu", classmethod(exec_menu))
    use_fake_provider(tmp_path, provider.base_url)
    app = App.open(tmp_path, qtbot)
    try:
        await app.wait_online()
        # Known from the ready frame's method list, before anything was asked.
        assert app.embedded.branch_available() == (False, BRANCH_NOT_SERVED)
        assert app.embedded.steer_available() == (False, STEER_NOT_SERVED)
        app.type_and_send(qtbot, "what is small and happy?")
        await until(lambda: len(app.finished_replies()) == 1, "the reply came")
        view = app.window.chat_view
        view.setFocus()
        qtbot.keyClick(view, Qt.Key.Key_End)
        qtbot.keyClick(view, Qt.Key.Key_Menu)
        branch = [m for m in menus[-1] if m[0] == "Branch from here"]
        assert branch == [("Branch from here", False, f"Not available: {BRANCH_NOT_SERVED}")]
        before = len(app.embedded.sessions())
        qtbot.keySequence(view, "Ctrl+Shift+B")
        assert app.window.status_message() == (
            f"Branch from here is not available: {BRANCH_NOT_SERVED}"
        )
        assert len(app.embedded.sessions()) == before, "no new chat tried"
    finally:
        await app.close()
