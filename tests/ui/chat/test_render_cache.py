"""Render caches: each chat view owns its own, and one invalidation empties all of them."""

from __future__ import annotations

from typing import Any

import pytest

from desktop.ui.chat import delegate
from desktop.ui.chat.view import ChatView
from desktop.ui.theme import DARK
from tests.ui.fakes import assistant, user

REPLY = "Intro paragraph.\n\n```py\nx = 1\n```\n\nA second paragraph.\n\nstill writ"


def _view(qtbot: Any) -> ChatView:
    v = ChatView()
    qtbot.addWidget(v)
    v.resize(640, 480)
    with qtbot.waitExposed(v):
        v.show()
    return v


def _stream(qtbot: Any, view: ChatView, reply: Any, text: str) -> None:
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text = text
        view.update_message(reply)
    view.grab()


def test_a_view_showing_a_reply_leaves_its_stream_in_another_view_alone(
    qtbot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two views showing one reply: the one where it streams keeps its finished block groups
    (laid out once) however the other lays the reply out."""
    # Its code block gets its colours in idle time, laid out anew then: not in this test (on a
    # busy machine the pause between its frames can be long enough).
    monkeypatch.setattr(delegate, "COLOUR_QUIET_MS", 60_000)
    streaming, other = _view(qtbot), _view(qtbot)
    reply = assistant("a1", "", streaming=True)
    streaming.show_messages([user("u1", "hi"), reply])
    _stream(qtbot, streaming, reply, REPLY)
    index = streaming.chat_model.index(1)
    groups = [doc for doc, _ in streaming.bubbles.layout_for(index).head_docs]
    assert len(groups) == 3
    # The same reply, already finished, in another view (another window on the session).
    other.show_messages([user("u1", "hi"), assistant("a1", REPLY + "ten.")])
    other.grab()
    assert not other.render_cache.docs.streamed_here("a1")
    _stream(qtbot, streaming, reply, REPLY + "ten, and more")
    again = [doc for doc, _ in streaming.bubbles.layout_for(index).head_docs]
    assert again == groups and all(a is b for a, b in zip(again, groups, strict=True)), (
        "the other view's layout made this one lay the streaming reply out again"
    )


def test_one_invalidation_empties_every_store_the_view_holds(qtbot: Any) -> None:
    """A theme change goes through `invalidate(Change.LOOK)`, which leaves no layout, height,
    picture, streamed document or rendered markdown behind, and the view shows the new look."""
    view = _view(qtbot)
    reply = assistant("a2", "", streaming=True)
    view.show_messages([user("u1", "**hi** there"), assistant("a1", "```py\ny = 2\n```"), reply])
    _stream(qtbot, view, reply, REPLY)
    view.copy()  # the accessible / copied plain text is cached too
    cache = view.render_cache
    stores = {
        "exact heights": cache.exact,
        "estimates": cache.estimates,
        "layouts": cache.layouts,
        "pixmaps": cache.pixmaps,
        "live drawings": cache.live,
        "block pixmaps": cache.block_pixmaps,
    }
    for name, store in stores.items():
        assert store, f"nothing cached in {name} to start with"
    assert cache.docs.streaming() == ["a2"]
    assert len(cache.docs.markdown) > 0
    before = view.viewport().grab().toImage()

    view.set_colors(DARK)

    for name, store in stores.items():
        assert not store, f"{name} kept after the theme changed"
    assert cache.docs.streaming() == [] and len(cache.docs.markdown) == 0
    assert cache.metrics is None and cache.pixmap_bytes == 0 and cache.block_bytes == 0
    assert cache.held() == 0 and cache.rows_stale
    assert view.viewport().grab().toImage() != before, "still shows the old theme"
    assert len(cache.rows) == 3 and not cache.rows_stale, "the rows were measured again"


def test_letting_rows_go_drops_only_what_is_held_for_them(qtbot: Any) -> None:
    """Rows let go far from the screen take their heights, layouts and pictures with them."""
    view = _view(qtbot)
    view.show_messages([assistant(f"a{n}", f"message {n}") for n in range(6)])
    view.grab()
    cache = view.render_cache
    assert "a0" in cache.exact and any(k[0] == "a0" for k in cache.layouts)
    view.drop_messages(2, newest=False)
    assert "a0" not in cache.exact and "a1" not in cache.exact
    assert not any(k[0] in ("a0", "a1") for k in [*cache.layouts, *cache.pixmaps])
    assert "a5" in cache.exact, "rows still shown were forgotten too"
