"""Start-up: the chat shown first did not wait for linkify's patterns or its code's lexer (see
ChatView's `at_start`); once the window is painted they are loaded at once, before a reply
streams, in it and in the chat windows restored with it, and every render after that is
final."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QSettings

from desktop.core.models import SessionSummary
from desktop.ui.platform.tray import Tray
from desktop.ui.render import markdown
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.main_window import MainWindow, ProfileEntry
from tests.ui.fakes import FakeBackend, assistant, laid_out

CODE = "total = compute(42, scale=2)  # step"
TEXT = f"See https://example.com/docs, then:\n\n```python\n{CODE}\n```\n"


def _shown(view: Any, row: int) -> tuple[list[str], set[str]]:
    """A message's links and the colours of its code line, as laid out now."""
    parts = laid_out(view, row)
    links = [f.anchorHref() for _text, f in parts if f.isAnchor()]
    colours = {f.foreground().color().name() for text, f in parts if text.strip() in CODE}
    return links, colours


def _at_start(view: Any) -> bool:
    """Whether the view's renders may still be provisional (until its start-up is done)."""
    return bool(view.render_cache.docs.markdown.at_start)


@pytest.fixture
def just_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing of linkify's or pygments' loaded yet, as in a process just started."""
    monkeypatch.setattr(markdown, "_LINKS_READY", False)
    monkeypatch.setattr(markdown, "_LEXERS_LOADED", set())
    monkeypatch.setattr(markdown, "_STYLES_LOADED", set())


def _backend() -> FakeBackend:
    backend = FakeBackend(pid="p1")
    backend.summaries = [
        SessionSummary("s1", "Notes", "", 1.0, 1, False, 0),
        SessionSummary("s2", "More notes", "", 2.0, 1, False, 0),
    ]
    backend.messages = {"s1": [assistant("a1", TEXT)], "s2": [assistant("a2", TEXT)]}
    return backend


def test_the_first_chat_gets_its_links_and_colours_once_the_window_is_painted(
    qtbot: Any, settings: QSettings, just_started: None
) -> None:
    backend = _backend()
    win = MainWindow(
        [ProfileEntry("P1", ProfileBridge(backend))], settings, tray=Tray(), at_start=True
    )
    qtbot.addWidget(win)
    win.resize(900, 600)
    win.open_session("s1")  # (as start-up reopens the last chat, before the window shows)
    view = win.chat_view
    assert _shown(view, 0) == ([], {view.bubbles.colors.text}), "not provisional before paint"
    win.show()
    qtbot.wait_until(lambda: win.after_paint.painted and not _at_start(view))
    # Made ready at once, not a slice at a time in idle time where a reply's frames may be.
    assert not view.bubbles._cache.docs.colours_waiting(), "left for idle time"
    assert not view.bubbles._colour.isActive()
    qtbot.wait_until(lambda: not view.bubbles.colouring)
    links, colours = _shown(view, 0)
    assert links == ["https://example.com/docs"] and len(colours) > 2
    # A reply arriving from now on shows its links and colours in its first layout (its
    # code in a language whose lexer is not loaded yet: loaded as it is laid out).
    later = TEXT.replace("docs", "more").replace("python", "ruby")
    view.append_messages([assistant("a2", later)])
    links, colours = _shown(view, 1)
    assert links == ["https://example.com/more"] and len(colours) > 2


@pytest.mark.qt_log_ignore("does not support raise")  # the offscreen platform
def test_a_chat_window_restored_at_start_gets_them_with_the_main_window(
    qtbot: Any, settings: QSettings, just_started: None
) -> None:
    # Left to its own idle slices, a restored chat window loaded pygments (~33 ms at once) in
    # one of them, perhaps in a reply's frames.
    settings.setValue("ui/chat_windows", '[["p1", "s2", ""]]')
    backend = _backend()
    win = MainWindow(
        [ProfileEntry("P1", ProfileBridge(backend))], settings, tray=Tray(), at_start=True
    )
    qtbot.addWidget(win)
    (chat_window,) = win.popouts.windows
    qtbot.addWidget(chat_window)
    view = chat_window.chat_view
    qtbot.wait_until(lambda: view.chat_model.rowCount() == 1)
    assert _shown(view, 0) == ([], {view.bubbles.colors.text}), "not provisional before paint"
    win.show()
    qtbot.wait_until(lambda: win.after_paint.painted and not _at_start(view))
    assert not view.bubbles._cache.docs.colours_waiting(), "left for its idle time"
    qtbot.wait_until(lambda: not view.bubbles.colouring)
    links, colours = _shown(view, 0)
    assert links == ["https://example.com/docs"] and len(colours) > 2
