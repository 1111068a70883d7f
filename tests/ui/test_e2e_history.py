"""End to end: thousands of chats listed and searched in full, a deep search hit landed on."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from desktop.app.assembly import EMBEDDED_PROFILE_ID, AppPaths
from desktop.core.chats.router import HISTORY_HELD, HISTORY_PAGE, HISTORY_WINDOW
from desktop.core.disk.store import CachedMessage
from desktop.core.disk.store import Store as LocalStore
from desktop.core.models import Role, SessionSummary
from desktop.core.profile.list_refresh import FIRST_PAGE
from desktop.gateway.sessions.store import Store
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.e2e_support import App, until, use_fake_provider
from tests.ui.sessions.test_search import CURRENT, _marked

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


def seed_long_chat(root: Path, texts: list[str], *, cached: bool = False) -> None:
    """Store chat "long" (user and assistant taking turns) in the embedded gateway; with
    `cached`, also in the app's own cache and search index, as after reading it once."""
    rows = [("user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(texts)]
    paths = AppPaths.create(str(root))
    gateway = Store(paths.data / "gateway" / "gateway.sqlite3")
    gateway.create_session("long", "Long", "desktop", 1.0)
    gateway.import_messages("long", [(r, t, 2.0 + i) for i, (r, t) in enumerate(rows)])
    gateway.close()
    if not cached:
        return
    local = LocalStore(paths.data / "hermes-qt.sqlite3")
    local.upsert_session(EMBEDDED_PROFILE_ID, "long", title="Long", message_count=len(texts))
    local.replace_messages(
        EMBEDDED_PROFILE_ID,
        "long",
        [CachedMessage(i, r, t, created_at=2.0 + i) for i, (r, t) in enumerate(rows)],
    )
    local.close()


async def open_long_chat(app: App) -> tuple[Any, Any]:
    """Once online and chat "long" is listed, open it from the window; the window and view."""
    await app.wait_online()
    win = app.window
    await until(lambda: win.session_model.row_of("long") is not None, "listed")
    win.open_session("long")
    return win, win.chat_view


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
    unsubscribe = app.embedded.subscribe(seen)
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
        # The index is kept: the next start lists every chat from the store before any answer
        # (the newest with the window, the rest once it is painted; its gateway never started).
        unsubscribe()
        await app.close()
        again = App.open(tmp_path, qtbot, start=False)
        try:
            listed = again.window.session_model
            await until(lambda: listed.rowCount() == CHATS, f"all {CHATS} chats listed again")
        finally:
            await again.close()
    finally:
        await app.close()


LONG = 1000
HIT = 20  # far older than the window a long session opens with


class HistorySizes(ListSizes):
    """Counts the rows of each history the backend replaced or prepended."""

    def __init__(self) -> None:
        super().__init__()
        self.snapshots: list[int] = []
        self.pages: list[int] = []

    def on_session_messages(self, key: str, messages: list[Any]) -> None:
        self.snapshots.append(len(messages))

    def on_messages_prepended(self, key: str, messages: list[Any]) -> None:
        self.pages.append(len(messages))


async def test_a_search_hit_older_than_the_loaded_window_is_landed_on(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    texts = [f"filler message number {i} about nothing" for i in range(LONG)]
    texts[HIT] = "The quokka is a small macropod that seems to smile."
    seed_long_chat(tmp_path, texts, cached=True)
    app = App.open(tmp_path, qtbot)
    unsubscribe: Callable[[], None] = lambda: None  # noqa: E731
    try:
        await app.wait_online()
        win, view = app.window, app.window.chat_view
        QTest.keyClicks(win.search_box, "quokka")
        await until(lambda: win.session_filter.rowCount() == 1, "the chat found")
        history = HistorySizes()
        snapshots = history.snapshots  # the cached history, then the gateway's window replacing it
        pages = history.pages  # older pages prepended
        unsubscribe = app.embedded.subscribe(history)
        QTest.keyClick(win.search_box, Qt.Key.Key_Return)
        assert win.session_key == "long"

        def landed() -> bool:
            index = view.currentIndex()
            return (
                snapshots[-1:] == [HISTORY_WINDOW]
                and index.isValid()
                and view.chat_model.message_at(index.row()).id == f"long:{HIT}"
                and view.bubbles.match_row == index.row()
            )

        await until(landed, f"message {HIT} of {LONG} centred and marked")
        # It opened with its last messages only: older pages were fetched to reach the hit.
        assert snapshots[-1] == HISTORY_WINDOW and sum(pages) >= LONG - HISTORY_WINDOW - HIT
        index = view.currentIndex()
        rect, middle = view.visualRect(index), view.viewport().rect().center().y()
        assert rect.top() <= middle <= rect.bottom() or abs(rect.center().y() - middle) < 60
        await until(lambda: _marked(view, view.currentIndex().row(), CURRENT) > 20, "highlighted")
        assert not view.at_bottom
    finally:
        unsubscribe()
        await app.close()


SCROLLED = 3000  # messages of the session scrolled far up and down again
BOUND = HISTORY_HELD + HISTORY_PAGE  # rows a view may hold for a moment: a page before its drop
HELD = BOUND + HISTORY_WINDOW  # and the conversation: that, and the live end kept hidden
ESSAY = " ".join(f"word{i}" for i in range(300))
REPLY_TEXT = "Hello back."


async def drag_until(
    app: App, up: bool, done: Callable[[], bool], what: str, seen: list[tuple[int, int]]
) -> None:
    """Drag the scroll bar to one end again and again (each arrival loads a page) until
    `done()`; the rows the view held and the bubbles the conversation held after every drag
    go into `seen`."""
    view = app.window.chat_view
    bar = view.verticalScrollBar()
    conv = app.controllers[EMBEDDED_PROFILE_ID]._feed.get("long")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 120
    while not done():
        assert loop.time() < deadline, f"timed out scrolling to {what}"
        bar.setValue(bar.minimum() if up else bar.maximum())
        before = (view.chat_model.rowCount(), view.first_position("long"))
        await until(
            lambda b=before: (
                done()  # type: ignore[misc]
                or (view.chat_model.rowCount(), view.first_position("long")) != b
            ),
            f"a page while scrolling to {what}",
            timeout=5,
        )
        assert conv is not None
        seen.append((view.chat_model.rowCount(), len(conv.messages)))


async def test_scrolling_far_up_holds_a_bounded_window_and_down_again_shows_the_live_end(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    with FakeOpenAIServer(ESSAY, chunk_size=8, chunk_delay=0.01) as provider:
        use_fake_provider(tmp_path, provider.base_url)
        seed_long_chat(tmp_path, [f"m{i}" for i in range(SCROLLED)])
        app = App.open(tmp_path, qtbot)
        try:
            win, view = await open_long_chat(app)
            await until(
                lambda: [m.text for m in app.messages()[-1:]] == [f"m{SCROLLED - 1}"],
                "opened",
            )
            # A reply starts streaming, then the user scrolls far up while it runs.
            app.type_and_send(qtbot, "Write an essay")
            await until(
                lambda: any(m.text for m in app.bubbles(Role.ASSISTANT) if m.streaming), "streaming"
            )
            held: list[tuple[int, int]] = []
            await drag_until(app, True, lambda: view.first_position("long") == 0, "the top", held)
            assert max(v for v, _ in held) <= BOUND, f"rows shown scrolling up: {held}"
            assert max(c for _, c in held) <= HELD, f"bubbles held scrolling up: {held}"
            # Far up, the live end is not shown; the reply finishes meanwhile.
            await until(
                lambda: bool(provider.requests) and not win.composer.stop_button.isVisibleTo(win),
                "reply done",
            )
            assert all(
                m.role is not Role.ASSISTANT or m.text.startswith("m") for m in app.messages()
            )
            await drag_until(
                app,
                False,
                lambda: view.at_bottom and app.messages()[-1].text == ESSAY,
                "the end",
                held,
            )
            assert max(v for v, _ in held) <= BOUND, f"rows shown scrolling down: {held}"
            assert max(c for _, c in held) <= HELD, f"bubbles held scrolling down: {held}"
            shown = app.messages()
            history = [m.text for m in shown[:-2]]
            first = int(history[0][1:])
            assert history == [f"m{i}" for i in range(first, SCROLLED)], "in order, none missing"
            assert [(m.role, m.text) for m in shown[-2:]] == [
                (Role.USER, "Write an essay"),
                (Role.ASSISTANT, ESSAY),
            ]
            assert len({m.id for m in shown}) == len(shown), "no message shown twice"
            # Back at the newest message by hand: the view knows it is loaded again, so the
            # jump button stays hidden until more than a screen up, and then just scrolls.
            assert not view.jump_button.isVisible(), "at the newest message: no button"
            bar = view.verticalScrollBar()
            bar.setValue(bar.maximum() - view.viewport().height() // 2)
            assert not view.at_bottom and not view.jump_button.isVisible(), "half a screen up"
            live_end_asked: list[bool] = []
            view.live_end_wanted.connect(lambda: live_end_asked.append(True))
            bar.setValue(bar.maximum() - 2 * view.viewport().height())
            assert view.jump_button.isVisible(), "two screens up: the button"
            QTest.mouseClick(view.jump_button, Qt.MouseButton.LeftButton)
            newest = view.chat_model.rowCount() - 1
            assert view.currentIndex().row() == newest, "the newest message is current"
            assert view.at_bottom, "the end of the newest (tall) reply is on screen"
            assert not view.jump_button.isVisible(), "scrolled to the newest: no button"
            assert not live_end_asked, "the newest message was loaded: no reload"
        finally:
            await app.close()


async def test_far_up_a_newer_search_hit_or_a_prompt_returns_to_the_live_end(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    texts = [f"m{i}" for i in range(SCROLLED)]
    late = SCROLLED - 100  # newer than any window far up holds
    texts[late] = "The quokka is a small macropod that seems to smile."
    with FakeOpenAIServer(REPLY_TEXT) as provider:
        use_fake_provider(tmp_path, provider.base_url)
        seed_long_chat(tmp_path, texts, cached=True)  # searchable, as after reading it
        app = App.open(tmp_path, qtbot)
        try:
            win, view = await open_long_chat(app)
            # The cached history shows first, then the gateway's window replaces it.
            await until(lambda: view.first_position("long") == SCROLLED - HISTORY_WINDOW, "opened")
            held: list[tuple[int, int]] = []

            def far_up() -> bool:
                first = view.first_position("long")
                return first is not None and first <= 600

            await drag_until(app, True, far_up, "far up", held)
            last = view.last_position("long")
            assert last is not None and last < late, "far up, the newer rows were let go"
            # A search hit newer than the window: shown from the live end, centred and marked.
            QTest.keyClicks(win.search_box, "quokka")
            await until(lambda: win.session_filter.rowCount() == 1, "the chat found")
            QTest.keyClick(win.search_box, Qt.Key.Key_Return)

            def landed() -> bool:
                index = view.currentIndex()
                return (
                    index.isValid()
                    and view.chat_model.message_at(index.row()).id == f"long:{late}"
                    and view.bubbles.match_row == index.row()
                )

            await until(landed, f"message {late} centred and marked")
            win.search_box.clear()
            win.find_bar.close()
            await drag_until(app, True, far_up, "far up again", held)
            # A prompt sent from far up shows at the end, the view following it, reply once.
            app.type_and_send(qtbot, "Hello from far up")
            await until(
                lambda: app.finished_replies()[-1].text == REPLY_TEXT and view.at_bottom, "reply"
            )
            shown = app.messages()
            assert [(m.role, m.text) for m in shown[-2:]] == [
                (Role.USER, "Hello from far up"),
                (Role.ASSISTANT, REPLY_TEXT),
            ]
            assert [m.text for m in shown[-5:-2]] == [
                f"m{i}" for i in range(SCROLLED - 3, SCROLLED)
            ]
            assert len({m.id for m in shown}) == len(shown), "no message shown twice"
        finally:
            await app.close()


async def test_far_up_the_jump_button_counts_a_reply_and_shows_the_newest_messages_again(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    # The reply goes on (for half a minute) while the user reads far up.
    with FakeOpenAIServer(ESSAY, chunk_size=8, chunk_delay=0.1) as provider:
        use_fake_provider(tmp_path, provider.base_url)
        seed_long_chat(tmp_path, [f"m{i}" for i in range(SCROLLED)])
        app = App.open(tmp_path, qtbot)
        try:
            _win, view = await open_long_chat(app)
            await until(lambda: view.last_position("long") == SCROLLED - 1, "opened")
            assert not view.jump_button.isVisible(), "at the newest message: no button"
            app.type_and_send(qtbot, "Write an essay")
            await until(
                lambda: any(m.text for m in app.bubbles(Role.ASSISTANT) if m.streaming), "reply"
            )

            def far_up() -> bool:
                first = view.first_position("long")
                return first is not None and first <= 600

            await drag_until(app, True, far_up, "far up", [])
            last = view.last_position("long")
            assert last is not None and last < SCROLLED - HISTORY_WINDOW, "newer rows let go"
            assert view.jump_button.isVisible()
            # The reply going on at the hidden live end is counted on the button.
            await until(lambda: view.jump_button.replies == 1, "the reply counted")
            assert view.jump_button.accessibleName() == "Jump to newest, 1 new reply"
            QTest.mouseClick(view.jump_button, Qt.MouseButton.LeftButton)
            await until(
                lambda: app.messages()[-1].role is Role.ASSISTANT and view.at_bottom, "the live end"
            )
            shown = app.messages()
            assert shown[-2].text == "Write an essay" and ESSAY.startswith(shown[-1].text)
            bottom = view.visualRect(view.chat_model.index(len(shown) - 1)).bottom()
            assert bottom <= view.viewport().height(), "the newest message is on screen"
            assert not view.jump_button.isVisible() and view.jump_button.replies == 0
            # What shows is the end of the history, in order, none missing.
            history = [m.text for m in shown[:-2]]
            assert history == [f"m{i}" for i in range(SCROLLED - len(history), SCROLLED)]
        finally:
            await app.close()


async def test_a_long_chat_opened_offline_shows_its_newest_page_then_every_earlier_message(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    """Its gateway never answers: the chat opens with its newest cached page only, scrolling
    up shows every earlier message from the cache (a bounded window far up), and scrolling
    down again shows the newest."""
    seed_long_chat(tmp_path, [f"m{i}" for i in range(SCROLLED)], cached=True)
    app = App.open(tmp_path, qtbot, start=False)
    try:
        win, view = app.window, app.window.chat_view
        await until(lambda: win.session_model.row_of("long") is not None, "listed")
        win.open_session("long")
        assert view.chat_model.rowCount() <= HISTORY_WINDOW, "its newest page, not all of it"
        assert app.messages()[-1].text == f"m{SCROLLED - 1}"
        held: list[tuple[int, int]] = []
        await drag_until(app, True, lambda: view.first_position("long") == 0, "the top", held)
        shown = [m.text for m in app.messages()]
        assert shown == [f"m{i}" for i in range(len(shown))], "from the first, none missing"
        await drag_until(
            app,
            False,
            lambda: view.last_position("long") == SCROLLED - 1 and view.at_bottom,
            "the end",
            held,
        )
        shown = [m.text for m in app.messages()]
        first = int(shown[0][1:])
        assert shown == [f"m{i}" for i in range(first, SCROLLED)], "to the newest, in order"
        assert max(v for v, _ in held) <= BOUND, f"rows shown: {held}"
        assert max(c for _, c in held) <= HELD, f"bubbles held: {held}"
        assert not app.embedded.is_online(), "all of it offline"
    finally:
        await app.close()


async def test_offline_a_search_hit_older_than_the_newest_cached_page_is_landed_on(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    texts = [f"filler message number {i} about nothing" for i in range(LONG)]
    texts[HIT] = "The quokka is a small macropod that seems to smile."
    seed_long_chat(tmp_path, texts, cached=True)
    app = App.open(tmp_path, qtbot, start=False)
    try:
        win, view = app.window, app.window.chat_view
        QTest.keyClicks(win.search_box, "quokka")
        await until(lambda: win.session_filter.rowCount() == 1, "the chat found")
        QTest.keyClick(win.search_box, Qt.Key.Key_Return)
        assert win.session_key == "long"

        def landed() -> bool:
            index = view.currentIndex()
            return (
                index.isValid()
                and view.chat_model.message_at(index.row()).id == f"long:{HIT}"
                and view.bubbles.match_row == index.row()
            )

        await until(landed, f"message {HIT} of {LONG} centred and marked, from the cache")
        assert not app.embedded.is_online()
    finally:
        await app.close()
