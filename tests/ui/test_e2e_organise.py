"""End to end: pinning and archiving chats in the list, kept across a restart (issue #27)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from desktop.ui.sessions.session_list import KEY_ROLE
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.e2e_support import App, until, use_fake_provider

pytestmark = pytest.mark.slow


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer("Noted.", chunk_size=8) as fake:
        yield fake


def _listed(app: App) -> list[str]:
    """The titles in the chat list, top to bottom, as the user sees them."""
    f = app.window.sidebar.session_filter
    return [
        app.window.session_model.session(str(f.index(r, 0).data(KEY_ROLE))).title  # type: ignore[union-attr]
        for r in range(f.rowCount())
    ]


def _focus_row(app: App, title: str) -> None:
    side = app.window.sidebar
    side.session_list.setFocus()
    for row in range(side.session_filter.rowCount()):
        index = side.session_filter.index(row, 0)
        if app.window.session_model.session(str(index.data(KEY_ROLE))).title == title:  # type: ignore[union-attr]
            side.session_list.setCurrentIndex(index)
            return
    raise AssertionError(f"{title} is not listed")


async def _chat(app: App, qtbot: Any, prompt: str) -> None:
    app.type_and_send(qtbot, prompt)
    await until(lambda: app.user_confirmed(prompt), f"{prompt} confirmed")
    await until(lambda: len(app.finished_replies()) == 1, f"{prompt}: the reply finished")
    await until(lambda: prompt in _listed(app), f"{prompt} listed")


async def test_pinned_chats_stay_on_top_and_archived_ones_leave_the_list_across_a_restart(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    use_fake_provider(tmp_path / "app", provider.base_url)
    app = App.open(tmp_path / "app", qtbot)
    try:
        await app.wait_online()
        for prompt in ("Oldest plan", "Middle plan", "Newest plan"):
            await _chat(app, qtbot, prompt)
            QTest.keySequence(app.window, "Ctrl+N")
        await until(
            lambda: _listed(app)[-3:] == ["Newest plan", "Middle plan", "Oldest plan"],
            "newest first",
        )
        side = app.window.sidebar
        _focus_row(app, "Oldest plan")
        QTest.keySequence(side.session_list, "Ctrl+Shift+P")
        await until(lambda: _listed(app)[0] == "Oldest plan", "the pinned chat on top")
        key = app.window.sidebar.session_filter.index(0, 0).data(KEY_ROLE)
        assert "pinned" in side.session_filter.index(0, 0).data(Qt.ItemDataRole.AccessibleTextRole)
        _focus_row(app, "Middle plan")
        QTest.keySequence(side.session_list, "Ctrl+Shift+A")
        await until(lambda: "Middle plan" not in _listed(app), "the archived chat left the list")
        assert side.archived_button.isVisible() and side.archived_button.text() == "Archived (1)"
        # Search still finds it.
        QTest.keyClicks(side.search_box, "Middle")
        await until(lambda: _listed(app) == ["Middle plan"], "search finds the archived chat")
        side.search_box.clear()
        await until(lambda: "Middle plan" not in _listed(app), "gone again without the query")
    finally:
        await app.close()

    app = App.open(tmp_path / "app", qtbot)
    try:
        side = app.window.sidebar
        await until(lambda: len(_listed(app)) >= 2, "the list after the restart")
        assert _listed(app)[0] == "Oldest plan"
        assert side.session_filter.index(0, 0).data(KEY_ROLE) == key
        assert "Middle plan" not in _listed(app)
        await app.wait_online()
        await until(lambda: "Newest plan" in _listed(app), "listed by the gateway")
        assert _listed(app)[0] == "Oldest plan" and "Middle plan" not in _listed(app)
        # The Archived view lists it, and restoring it (keyboard) puts it back in the list.
        QTest.mouseClick(side.archived_button, Qt.MouseButton.LeftButton)
        assert _listed(app) == ["Middle plan"]
        assert side.session_list.accessibleName() == "Archived chats"
        _focus_row(app, "Middle plan")
        QTest.keySequence(side.session_list, "Ctrl+Shift+A")
        await until(lambda: _listed(app) == [], "restored: no archived chat left")
        QTest.mouseClick(side.archived_button, Qt.MouseButton.LeftButton)
        assert "Middle plan" in _listed(app) and not side.archived_button.isVisible()
        # Unpinning puts the oldest back in date order.
        _focus_row(app, "Oldest plan")
        QTest.keySequence(side.session_list, "Ctrl+Shift+P")
        await until(lambda: _listed(app)[-1] == "Oldest plan", "unpinned: back in date order")
    finally:
        await app.close()


async def test_a_deleted_chat_reaches_the_gateway_only_after_the_undo_window(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer, monkeypatch: Any
) -> None:
    use_fake_provider(tmp_path / "app", provider.base_url)
    app = App.open(tmp_path / "app", qtbot)
    told: list[tuple[str, Any]] = []
    try:
        await app.wait_online()
        for prompt in ("Keep me", "Delete me"):
            await _chat(app, qtbot, prompt)
            QTest.keySequence(app.window, "Ctrl+N")
        sup = app.embedded._admin._sup
        call = sup.call

        async def recording(method: str, params: Any = None, **kw: Any) -> Any:
            told.append((method, params))
            return await call(method, params, **kw)

        monkeypatch.setattr(sup, "call", recording)
        side, undo = app.window.sidebar, app.window.chat_admin.undo
        _focus_row(app, "Delete me")
        key = side.selected_key()
        QTest.keyClick(side.session_list, Qt.Key.Key_Delete)
        assert "Delete me" not in _listed(app)
        assert undo.toast.isVisible() and undo.toast.label.text() == "Deleted “Delete me”"
        assert undo.timer.isActive() and undo.timer.interval() == 5000
        assert not [m for m, _ in told if m == "session.delete"], "the gateway is not told yet"
        # Undo (the toast's button) puts it back; the gateway never hears of it.
        QTest.mouseClick(undo.toast.undo_button, Qt.MouseButton.LeftButton)
        assert "Delete me" in _listed(app) and not undo.toast.isVisible()
        assert not undo.timer.isActive()
        assert not [m for m, _ in told if m == "session.delete"]
        # Deleted again, and the window passes (the timer's end, without waiting 5 s for it).
        _focus_row(app, "Delete me")
        QTest.keyClick(side.session_list, Qt.Key.Key_Delete)
        undo.timer.timeout.emit()
        await until(lambda: ("session.delete", {"session_id": key}) in told, "told the gateway")
        await until(lambda: app.window.session_model.session(str(key)) is None, "deleted there")
    finally:
        await app.close()
    app = App.open(tmp_path / "app", qtbot)
    try:
        await app.wait_online()
        await until(lambda: "Keep me" in _listed(app), "listed by the gateway")
        assert "Delete me" not in _listed(app), "gone from the gateway too"
    finally:
        await app.close()
