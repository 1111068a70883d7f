"""End to end: two profiles streaming at once never leak into each other's view; huge sessions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop.app.assembly import AppPaths
from desktop.core.chats.router import HISTORY_PAGE, HISTORY_WINDOW
from desktop.core.disk.store import CachedMessage, Store
from desktop.core.link.profiles import FileTokenStore, Profile, ProfileKind
from desktop.core.models import Role
from desktop.gateway.providers.offline import OfflineProvider
from desktop.gateway.rpc.server import GatewayConfig, GatewayServer
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.e2e_support import App, add_profiles, until, use_fake_provider

pytestmark = pytest.mark.slow

TOKEN = "second-gateway-token-0123456789abcdef"
A_REPLY = " ".join(f"alpha{i}" for i in range(150))


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(A_REPLY, chunk_size=12, chunk_delay=0.01) as fake:
        yield fake


def _texts(app: App) -> str:
    return "\n".join(m.text for m in app.messages())


async def test_events_of_one_profile_never_show_in_the_other(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    use_fake_provider(tmp_path, provider.base_url)
    second = GatewayServer(
        GatewayConfig(data_dir=tmp_path / "second-gw", token=TOKEN),
        OfflineProvider(chunk_interval=0.005),
    )
    url = await second.start()
    paths = AppPaths.create(str(tmp_path))
    FileTokenStore(paths.config / "tokens.json").set("profile:second:1", TOKEN)
    add_profiles(
        tmp_path,
        [Profile("second", "Second", ProfileKind.REMOTE, url=url, token_ref="profile:second:1")],
    )
    app = App.open(tmp_path, qtbot)
    win = app.window
    try:
        await app.wait_online("embedded")
        await app.wait_online("second")
        assert win.profile_id == "embedded"
        app.type_and_send(qtbot, "alpha question")
        await until(lambda: "alpha1 " in _texts(app), "profile A streams")
        win.profile_combo.setCurrentIndex(win.profile_combo.findData("second"))
        assert win.profile_id == "second"
        assert app.messages() == [], "B opens empty while A streams"
        app.type_and_send(qtbot, "bravo question")
        # While both stream, B's view only ever holds B's conversation.
        seen_b = False

        def b_only() -> bool:
            nonlocal seen_b
            text = _texts(app)
            assert "alpha" not in text, "profile A's events leaked into profile B"
            seen_b = seen_b or "bravo question" in text
            return len(app.finished_replies()) == 1

        await until(b_only, "B's reply finished")
        assert seen_b and "bravo question" in app.finished_replies()[0].text
        # The message box follows the chat a frame later.
        await until(lambda: not win.composer.stop_button.isVisibleTo(win), "B's Stop gone")

        win.profile_combo.setCurrentIndex(win.profile_combo.findData("embedded"))
        assert win.profile_id == "embedded"

        def a_only() -> bool:
            assert "bravo" not in _texts(app), "profile B's messages leaked into profile A"
            return len(app.finished_replies()) == 1

        await until(a_only, "A's reply finished")
        assert app.finished_replies()[0].text == A_REPLY
        assert [m.text for m in app.bubbles(Role.USER)] == ["alpha question"]
        titles = [s.title for s in app.controllers["second"].sessions()]
        assert titles == ["bravo question"], "B's list holds only B's chat"
    finally:
        await app.close()
        await second.stop()


async def test_ten_thousand_message_session_opens_at_the_end_and_scrolls(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    paths = AppPaths.create(str(tmp_path))
    store = Store(str(paths.data / "hermes-qt.sqlite3"))
    try:
        store.upsert_session("embedded", "big-session", title="Big", updated_at=1.0)
        rows = [
            CachedMessage(
                idx=i,
                role="user" if i % 2 == 0 else "assistant",
                text=f"message number {i} " * (1 + i % 4),
                thinking="",
                created_at=float(i),
                status="complete",
            )
            for i in range(10_000)
        ]
        store.replace_messages("embedded", "big-session", rows)
    finally:
        store.close()
    # Offline: the cache alone must open the session (no gateway needed to show history),
    # with its newest page, as a gateway's first (older pages come as the user scrolls up).
    app = App.open(tmp_path, qtbot, start=False)
    view = app.window.chat_view
    try:
        app.window.open_session("big-session")
        assert view.chat_model.rowCount() == HISTORY_WINDOW
        last = view.chat_model.index(HISTORY_WINDOW - 1)
        await until(
            lambda: (
                not view.bubbles._resize_timer.isActive()
                and view.visualRect(last).intersects(view.viewport().rect())
            ),
            "opened at the end, layout settled",
        )
        assert view.chat_model.message_at(last.row()).text.startswith("message number 9999")
        assert view.bubbles.layouts_built < 60, "only visible rows were laid out"
        bar = view.verticalScrollBar()
        pages = 0
        while view.first_position("big-session") != 0:
            # At the top an older page arrives from the cache, the rows on screen kept.
            first = view.first_position("big-session")
            bar.setValue(0)
            await until(lambda f=first: view.first_position("big-session") != f, "a page")  # type: ignore[misc]
            pages += 1
        assert pages >= (10_000 - HISTORY_WINDOW) // HISTORY_PAGE
        view.bubbles.painted_rows.clear()
        built = view.bubbles.layouts_built
        bar.setValue(0)
        await until(lambda: 0 in view.bubbles.painted_rows, "the first message painted")
        first_row = view.chat_model.index(0)
        assert view.chat_model.message_at(0).text.startswith("message number 0 ")
        assert view.visualRect(first_row).intersects(view.viewport().rect()), "at the top"
        assert max(view.bubbles.painted_rows) < 60, "only a screenful painted at the top"
        assert view.bubbles.layouts_built - built < 60
    finally:
        await app.close()
