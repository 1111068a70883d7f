"""Paint cost: unchanged bubbles come from cache; a streaming reply redraws only its tail."""

from __future__ import annotations

from typing import Any

import pytest

from desktop.ui.chat_view import ChatView
from desktop.ui.markdown import code_blocks, render_markdown, split_streaming, stable_split
from tests.ui.fakes import assistant, user


@pytest.fixture
def view(qtbot: Any) -> ChatView:
    v = ChatView()
    qtbot.addWidget(v)
    v.resize(640, 480)
    with qtbot.waitExposed(v):
        v.show()
    return v


def test_split_never_cuts_inside_a_code_fence() -> None:
    text = "intro\n\n```py\nx = 1\n\ny = 2\n```\n\nafter the code\n\nstill writ"
    prefix, tail = split_streaming(text)
    assert prefix == "intro\n\n```py\nx = 1\n\ny = 2\n```\n\nafter the code\n\n"
    assert tail == "still writ"
    open_fence = "intro\n\n```py\nx = 1\n\ny = 2"
    assert split_streaming(open_fence) == ("intro\n\n", "```py\nx = 1\n\ny = 2")
    assert stable_split("one paragraph only") == 0


def test_code_still_highlighted_and_copyable_with_lazy_pygments() -> None:
    html = render_markdown("```python\ndef f():\n    return 1\n```")
    assert "<table" in html and "def" in html and "color:" in html
    assert code_blocks("text\n\n```\nblock\n```") == ["block"]


def test_repaint_copies_unchanged_bubbles_and_redraws_only_the_changed_one(
    qtbot: Any, view: ChatView
) -> None:
    reply = assistant("a1", "first paragraph\n\nsecond", streaming=True)
    view.show_messages([user("u1", "hello"), assistant("a0", "**earlier** answer"), reply])
    qtbot.wait_until(lambda: view.bubbles.painted_rows >= {0, 1, 2})
    view.grab()
    drawn = view.bubbles.bubbles_drawn
    view.grab()
    assert view.bubbles.bubbles_drawn == drawn, "an unchanged screen redraws no bubble"
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text += " paragraph grows"
        view.update_message(reply)
    view.grab()
    assert view.bubbles.bubbles_drawn == drawn + 1, "only the growing reply is redrawn"
    lay = view.bubbles.layout_for(view.chat_model.index(2))
    assert lay.tail_doc is not None and "paragraph grows" in lay.tail_doc.toPlainText()


def test_streaming_reply_lays_out_finished_blocks_once(qtbot: Any, view: ChatView) -> None:
    reply = assistant("a1", "done block\n\n", streaming=True)
    view.show_messages([reply])
    index = view.chat_model.index(0)
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text += "tail one"
        view.update_message(reply)
    before = view.bubbles.layout_for(index).doc
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text += " and two"
        view.update_message(reply)
    after = view.bubbles.layout_for(index)
    assert after.doc is before, "the finished blocks' document is reused between deltas"
    assert after.tail_doc is not None and after.tail_doc.toPlainText().strip() == "tail one and two"
    reply.streaming = False
    with qtbot.wait_signal(view.chat_model.flushed):
        view.update_message(reply)
    final = view.bubbles.layout_for(index)
    assert final.tail_doc is None and final.doc is not None
    assert final.doc.toPlainText().split() == ["done", "block", "tail", "one", "and", "two"]


def test_theme_change_redraws_cached_bubbles(qtbot: Any, view: ChatView) -> None:
    from desktop.ui.theme import DARK

    view.show_messages([user("u1", "hello")])
    qtbot.wait_until(lambda: 0 in view.bubbles.painted_rows)
    view.grab()
    drawn = view.bubbles.bubbles_drawn
    view.set_colors(DARK)
    view.grab()
    assert view.bubbles.bubbles_drawn > drawn, "a new theme is never shown from stale pixmaps"
