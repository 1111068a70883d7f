"""End to end: a long-lived gateway with thousands of chats is listed and searched in full."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtTest import QTest

from desktop.app import AppPaths
from desktop.core.models import SessionSummary
from desktop.core.online_catchup import FIRST_PAGE
from desktop.gateway.store import Store
from tests.ui.e2e_support import App, until

pytestmark = pytest.mark.slow

CHATS = 3000


def seed_gateway(root: Path, count: int) -> None:
    """Give the embedded gateway `count` stored chats, "chat 0" the oldest."""
    path = AppPaths.create(str(root)).data / "gateway" / "gateway.sqlite3"
    Store(path).close()  # the gateway's own schema
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO sessions(id, title, source, started_at, updated_at) VALUES (?,?,?,?,?)",
            [(f"sid-{i}", f"chat {i}", "desktop", 1.7e9 + i, 1.7e9 + i) for i in range(count)],
        )


class ListSizes:
    """Records the size of every session list the window is sent."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return lambda *args: None

    def on_sessions(self, sessions: list[SessionSummary]) -> None:
        self.sizes.append(len(sessions))


async def test_every_chat_of_a_long_history_is_listed_and_found(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    seed_gateway(tmp_path, CHATS)
    app = App.open(tmp_path, qtbot, start=False)
    seen = ListSizes()
    app.embedded.add_listener(seen)
    app.embedded.start()
    try:
        await app.wait_online()
        model = app.window.session_model
        await until(lambda: model.rowCount() == CHATS, f"all {CHATS} chats listed")
        # The first list shown is one page; the rest follows in the background.
        assert seen.sizes[0] == FIRST_PAGE
        assert model.data(model.index(0)) == f"chat {CHATS - 1}"
        QTest.keyClicks(app.window.search_box, "chat 0")
        shown = app.window.session_filter
        assert [shown.index(r, 0).data() for r in range(shown.rowCount())] == ["chat 0"]
        # The index is kept: the next start lists every chat from the store before any answer.
        app.embedded.remove_listener(seen)
        await app.close()
        again = App.open(tmp_path, qtbot, start=False)
        try:
            assert again.window.session_model.rowCount() == CHATS
        finally:
            await again.close()
    finally:
        await app.close()
