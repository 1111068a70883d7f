"""Paint cost: unchanged bubbles come from cache; a streaming reply redraws only its tail."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QPoint, QPointF, QRect, Qt
from PySide6.QtGui import QFont
from PySide6.QtTest import QTest

from desktop.core.models import Role
from desktop.ui.chat.model import MESSAGE_ROLE
from desktop.ui.chat.render_cache import Change
from desktop.ui.chat.view import ChatView
from desktop.ui.render import bubble_layout
from desktop.ui.render.document import only_code
from desktop.ui.render.links import LinkOpener
from desktop.ui.render.markdown import (
    MarkdownCache,
    code_blocks,
    ends_in_open_fence,
    render_markdown,
    render_markdown_fresh,
    split_streaming,
    stable_split,
    stream_chunks,
)
from desktop.ui.theme import LIGHT
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


def test_fence_scanners_agree_on_where_a_code_block_closes() -> None:
    # One walk decides it for all three: a fence closed on a CRLF line is closed for each.
    text = "intro\r\n\r\n```py\r\nx = 1\r\n\r\ny = 2\r\n```\r\n\r\nwrit"
    assert not ends_in_open_fence(text)
    assert stable_split(text) == len(text) - len("writ")
    groups, tail = stream_chunks(text)
    assert groups[-1].startswith("```py") and tail == "writ"
    assert ends_in_open_fence(text[: text.index("y = 2")])


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
    before = view.bubbles.layout_for(index).head_docs[0][0]
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text += " and two"
        view.update_message(reply)
    after = view.bubbles.layout_for(index)
    assert after.head_docs[0][0] is before, "finished blocks are reused between deltas"
    assert after.tail_doc is not None and after.tail_doc.toPlainText().strip() == "tail one and two"
    reply.streaming = False
    with qtbot.wait_signal(view.chat_model.flushed):
        view.update_message(reply)
    ended = view.bubbles.layout_for(index)
    assert ended.head_docs[0][0] is before, "laid out again as it ended (the next reply waits)"
    qtbot.wait_until(lambda: view.bubbles.layout_for(index).doc is not None)  # then, idle
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


_ATOMS = ["word ", "\n", "\n\n", "- ", "1. ", "```\n", "  ", "    ", "> ", "*x* ", "[a](http://x) "]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_ATOMS), max_size=30))
@example(["\n", "> ", "```\n", "> ", "  "])  # a quoted code block ending in spaces
def test_block_groups_render_exactly_like_the_finished_text(atoms: list[str]) -> None:
    text = "".join(atoms)
    groups, tail = stream_chunks(text)
    prefix, rest = split_streaming(text)
    assert "".join(groups) == prefix and tail == rest
    style = ("friendly", "#fff", "#000")
    whole = render_markdown_fresh(prefix, *style)
    assert "".join(render_markdown_fresh(g, *style) for g in groups) == whole
    # A finished reply built from the groups it streamed in renders as the whole text does.
    finished = MarkdownCache().render_finished(text, *style)
    assert finished == render_markdown_fresh(text, *style)


def test_block_groups_never_cut_a_code_fence_or_a_loose_list() -> None:
    text = "intro\n\n```py\nx = 1\n\ny = 2\n```\n\n- a\n\n- b\n\n  more b\n\nafter\n\nwrit"
    groups, tail = stream_chunks(text)
    assert groups == [
        "intro\n\n",
        "```py\nx = 1\n\ny = 2\n```\n\n",
        "- a\n\n- b\n\n  more b\n\n",
        "after\n\n",
    ]
    assert tail == "writ"


def _paragraph(n: int) -> str:
    return f"paragraph {n} " + "words " * 30 + "\n\n"


_WORDS = st.sampled_from(["word", "**bold** text", "`code`", "a [link](http://x.org)", "~~gone~~"])
_TEXT = st.lists(_WORDS, min_size=1, max_size=6).map(" ".join)
# Blocks as replies write them (degenerate ones, an empty heading or quote, aside).
_BLOCKS = st.one_of(
    _TEXT,
    st.tuples(st.integers(1, 4), _TEXT).map(lambda h: "#" * h[0] + " " + h[1]),
    st.lists(_TEXT, min_size=1, max_size=3).map(lambda xs: "\n".join(f"- {x}" for x in xs)),
    st.lists(_TEXT, min_size=1, max_size=3).map(
        lambda xs: "\n".join(f"{i}. {x}" for i, x in enumerate(xs, 1))
    ),
    st.integers(1, 4).map(
        lambda n: "```py\n" + "".join(f"x_{i} = {i}\n" for i in range(n)) + "```"
    ),
    st.integers(1, 3).map(
        lambda n: "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | `{i}` |" for i in range(n))
    ),
    _TEXT.map(lambda x: f"> {x}"),
    st.just("---"),
    st.tuples(_TEXT, _TEXT).map(lambda t: f"- [ ] {t[0]}\n- [x] {t[1]}"),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_BLOCKS, min_size=2, max_size=6))
def test_block_groups_sit_where_the_finished_reply_puts_their_blocks(
    qtbot: Any, view: ChatView, blocks: list[str]
) -> None:
    # A streaming reply stacks its finished groups as documents of their own; spaced as the
    # whole text spaces its blocks, the reply reads the same while it streams and does not
    # move when it ends and is laid out whole.
    text = "\n\n".join(blocks)
    streamed = assistant("s", text + "\n\nmore", streaming=True)
    whole = assistant("w", text + "\n\nmore")
    view.show_messages([streamed, whole])
    bubbles = view.bubbles
    stacked = bubbles.layout_for(view.chat_model.index(0))
    laid = bubbles.layout_for(view.chat_model.index(1))
    assert stacked.doc is None and laid.doc is not None

    def places(docs: list[tuple[Any, QPointF]]) -> list[tuple[str, float]]:
        out = []
        for doc, at in docs:
            block = doc.begin()
            while block.isValid():
                if block.text().strip():
                    y = doc.documentLayout().blockBoundingRect(block).y()
                    out.append((block.text().strip(), at.y() + y))
                block = block.next()
        return out

    assert places(stacked.text_docs()) == places(laid.text_docs())
    assert stacked.height == laid.height


def test_a_paragraph_break_renders_only_the_new_paragraph(
    qtbot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered: list[str] = []
    docs = bubble_layout.BubbleDocs()
    real = docs.markdown.render

    def counting(text: str, *style: str) -> str:
        rendered.append(text)
        return real(text, *style)

    monkeypatch.setattr(docs.markdown, "render", counting)
    font = ChatView().font()
    reply = assistant("stream-10", "", streaming=True)
    for n in range(1, 10):
        reply.text += _paragraph(n)
        bubble_layout.build_layout(reply, 640, font, LIGHT, frozenset(), docs=docs)
    reply.text += "paragraph 10 still being writ"
    bubble_layout.build_layout(reply, 640, font, LIGHT, frozenset(), docs=docs)
    rendered.clear()
    reply.text = reply.text.removesuffix("still being writ") + "words\n\nele"
    lay = bubble_layout.build_layout(reply, 640, font, LIGHT, frozenset(), docs=docs)
    assert rendered == ["paragraph 10 words\n\n"], "earlier paragraphs re-rendered"
    assert len(lay.head_docs) == 10
    tops = [pos.y() for _, pos in lay.head_docs]
    assert tops == sorted(tops) and lay.tail_pos.y() > tops[-1], "groups stack top to bottom"
    assert lay.tail_doc is not None and lay.tail_doc.toPlainText().strip() == "ele"


def test_links_and_copy_buttons_work_in_early_block_groups(
    qtbot: Any, view: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    monkeypatch.setattr(
        LinkOpener,
        "open_external",
        classmethod(lambda cls, url: opened.append(url.toString()) or True),
    )
    text = (
        "intro\n\n[docs](https://example.org/docs)\n\n```py\nx = 1\n\ny = 2\n```\n\n"
        "between\n\n```\nsecond\n```\n\nlast para\n\nstill writ"
    )
    reply = assistant("a1", text, streaming=True)
    view.show_messages([reply])
    index = view.chat_model.index(0)
    qtbot.wait_until(lambda: 0 in view.bubbles.painted_rows)
    lay = view.bubbles.layout_for(index)
    assert len(lay.head_docs) == 6 and lay.doc is None
    link_doc, at = lay.head_docs[1]
    assert link_doc.toPlainText().strip() == "docs" and at.y() > lay.head_docs[0][1].y()
    rect = view.visualRect(index)
    line = link_doc.documentLayout().blockBoundingRect(link_doc.begin())
    pos = QPoint(int(rect.left() + at.x() + 6), int(rect.top() + at.y() + line.height() / 2))
    QTest.mouseClick(
        view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pos
    )
    assert opened == ["https://example.org/docs"]
    for n, code in enumerate(["x = 1\n\ny = 2", "second"]):
        center = view.bubbles.zone_center(index, "copy", n)
        assert center is not None
        click = QPoint(int(rect.left() + center.x()), int(rect.top() + center.y()))
        with qtbot.wait_signal(view.code_copied) as copied:
            QTest.mouseClick(
                view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, click
            )
        assert copied.args == [code]
    # The second code block's button sits on its own group, below the first group's.
    second = view.bubbles.zone_center(index, "copy", 1)
    assert second is not None and second.y() > lay.head_docs[4][1].y()
    assert view.bubbles.zone_center(index, "copy", 0) != second


def test_a_paragraph_break_draws_only_the_new_group(qtbot: Any, view: ChatView) -> None:
    reply = assistant("a1", "".join(_paragraph(n) for n in range(1, 10)) + "writ", streaming=True)
    view.show_messages([reply])
    qtbot.wait_until(lambda: 0 in view.bubbles.painted_rows)
    view.grab()
    drawn, kept = view.bubbles.blocks_drawn, view.bubbles.rows_kept
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text += "ing the tenth\n\nnext"
        view.update_message(reply)
    view.grab()
    # The paragraphs before are copied from the last frame; the new one is drawn where it
    # changed, not into a picture of it all (nor any other paragraph into theirs).
    assert view.bubbles.rows_kept > kept
    assert view.bubbles.blocks_drawn == drawn, "a finished paragraph was drawn into its picture"


def test_finished_reply_looks_exactly_as_if_it_never_streamed(qtbot: Any, view: ChatView) -> None:
    text = "Intro with [a link](https://example.org)\n\n- one\n\n- two\n\n```py\nx = 1\n```\n\nEnd"
    streamed = assistant("a1", "", streaming=True)
    plain = assistant("a2", text)
    view.show_messages([streamed, plain])
    for cut in range(0, len(text) + 1, 7):
        with qtbot.wait_signal(view.chat_model.flushed):
            streamed.text = text[:cut] or "I"
            view.update_message(streamed)
        view.grab()
    streamed.text, streamed.streaming = text, False
    view.bubbles._settle.setInterval(60_000)  # (laid out whole only when this test says)
    with qtbot.wait_signal(view.chat_model.flushed):
        view.update_message(streamed)
    qtbot.wait_until(lambda: {0, 1} <= view.bubbles.painted_rows)
    # As it ends it keeps the layout it streamed in; with its code's colours (idle time) it
    # shows a plain reply's pixels.
    qtbot.wait_until(lambda: not view.bubbles.colouring)
    view.viewport().repaint()
    assert view.bubbles.layout_for(view.chat_model.index(0)).doc is None
    shot = view.viewport().grab()
    a, b = (view.visualRect(view.chat_model.index(r)) for r in (0, 1))
    assert shot.copy(a).toImage() == shot.copy(b).toImage(), "ended: not as a plain reply"
    # Idle a moment later, it is laid out whole, as a plain reply is.
    view.bubbles._settle.start(0)
    qtbot.wait_until(lambda: view.bubbles.layout_for(view.chat_model.index(0)).doc is not None)
    lay_a = view.bubbles.layout_for(view.chat_model.index(0))
    lay_b = view.bubbles.layout_for(view.chat_model.index(1))
    assert lay_a.head_docs == [] and lay_a.doc is not None and lay_b.doc is not None
    assert lay_a.doc.toHtml() == lay_b.doc.toHtml()
    assert lay_a.height == lay_b.height
    shot = view.viewport().grab()
    a, b = (view.visualRect(view.chat_model.index(r)) for r in (0, 1))
    assert shot.copy(a).toImage() == shot.copy(b).toImage(), "same pixels as a plain reply"
    assert QPointF(lay_a.doc_pos) == QPointF(lay_b.doc_pos)


def test_a_code_block_being_written_is_coloured_once_its_fence_closes() -> None:
    open_code = "```python\ndef f():\n    return 1\n"
    plain = render_markdown_fresh(open_code, "friendly", "#fff", "#000", open_fence=True)
    assert "def f():" in plain and "<span" not in plain, "coloured while still being written"
    closed = render_markdown_fresh(open_code + "```\n", "friendly", "#fff", "#000")
    assert '<span style="color:' in closed, "a closed block gets its colours"


def test_a_growing_reply_taller_than_the_view_draws_only_what_shows(
    qtbot: Any, view: ChatView
) -> None:
    lines = "".join(f"| {i} | row {i} |\n" for i in range(120))
    reply = assistant("a1", "| # | name |\n|---|---|\n" + lines, streaming=True)
    view.show_messages([reply])
    qtbot.wait_until(lambda: 0 in view.bubbles.painted_rows)
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text += "| 120 | row 120 |\n"
        view.update_message(reply)
    view.grab()
    lay = view.bubbles.layout_for(view.chat_model.index(0))
    assert lay.bubble.height() > 2 * view.viewport().height(), "the reply is screens tall"
    sizes = [pix.height() / pix.devicePixelRatio() for pix, _ in view.render_cache.pixmaps.values()]
    assert sizes and max(sizes) <= view.viewport().height(), "drew more than the screen shows"
    assert len(view.render_cache.pixmaps) == 1, "the previous frame's drawing was not dropped"


def test_a_long_reply_that_finishes_draws_what_shows_and_looks_the_same(
    qtbot: Any, view: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = "".join(f"| {i} | row {i} |\n" for i in range(120))
    reply = assistant("a1", "| # | name |\n|---|---|\n" + lines, streaming=True)
    view.show_messages([reply])
    qtbot.wait_until(lambda: 0 in view.bubbles.painted_rows)
    reply.streaming = False
    with qtbot.wait_signal(view.chat_model.flushed):
        view.update_message(reply)
    view.scrollToBottom()
    shot = view.viewport().grab().toImage()
    rev = view.chat_model.revision_of("a1")
    drawn = sum(
        pix.height() / pix.devicePixelRatio()
        for key, (pix, _) in view.render_cache.pixmaps.items()
        if key[1] == rev
    )
    assert drawn <= 2 * view.viewport().height(), "drew screens of the reply nobody sees"
    # Drawn whole, the same reply shows the same pixels: no seams between the parts.
    monkeypatch.setattr("desktop.ui.chat.delegate.TILE_SCREENS", 100.0)
    view.render_cache.pixmaps.clear()
    view.viewport().update()
    assert view.viewport().grab().toImage() == shot


@pytest.mark.parametrize(
    "tail",
    ["| # | name |\n|---|---|\n| 1 | `one` |\n| 22 | two |\n", "narrow\n***\nrule above"],
)
def test_the_block_being_written_looks_as_if_laid_out_to_fit(
    qtbot: Any, view: ChatView, monkeypatch: pytest.MonkeyPatch, tail: str
) -> None:
    reply = assistant("a1", "A table:\n\n" + tail, streaming=True)
    view.show_messages([user("u1", "hi"), reply])
    qtbot.wait_until(lambda: 1 in view.bubbles.painted_rows)
    lay = view.bubbles.layout_for(view.chat_model.index(1))
    assert lay.tail_doc is not None
    shot = view.viewport().grab().toImage()
    fitted = bubble_layout._markdown_doc
    monkeypatch.setattr(
        bubble_layout, "_markdown_doc", lambda *a, **k: fitted(*a, **{**k, "fit": True})
    )
    view.render_cache.invalidate(Change.LOOK)
    view.viewport().update()
    assert view.viewport().grab().toImage() == shot, "the growing block looks different"


_GROWING = [
    # a table growing a row at a time, then closed by a blank line
    "Intro\n\n| # | name | value |\n|---|---|---|\n"
    + "".join(f"| {r} | `item{r}` | {r * 7} |\n" for r in range(8))
    + "| 8 | a much wider cell than any before | 1 |\n\nafter the table",
    # a code block growing a line at a time, its fence closed mid-stream
    "Code:\n\n```python\n"
    + "".join(f"total_{k} = compute({k})\n" for k in range(12))
    + "```\nmore",
    # nested lists, a setext heading, an ordered list
    "- one\n  - nested\n  - nested two\n- two\n\nHeading\n---\ntext\n\n1. a\n2. b",
    # with a table above them in the same block: an alignment row that changes as it is
    # written, a code block coloured when its fence closes, a task item that turns its
    # list's bullets off
    "| a |\n|-:|\n| 1 |\n",
    "| a |\n|---|\n| 1 |\n```py\nx = 1\n```\n",
    "| x |\n|---|\n- a\n- [ ] b\n",
    # a rule after a table, drawn past the bubble's edge, then a heading growing below it
    "\n|:-|-:|\n|---|---|\nx = 1\n---\nx = 1\n# ~~s~~ ``` more",
]


def _stream_and_compare(qtbot: Any, view: ChatView, text: str, cuts: list[int]) -> None:
    """Stream `text` cut by cut; every frame drawn must equal the same layout drawn whole."""
    reply = assistant(f"g{len(view.render_cache.live_keys)}-{len(text)}", "", streaming=True)
    view.show_messages([user("u1", "hi"), reply])
    bubbles = view.bubbles
    for cut in cuts:
        with qtbot.wait_signal(view.chat_model.flushed):
            reply.text = text[:cut]
            view.update_message(reply)
        view.grab()
        index = view.chat_model.index(1)
        lay = bubbles.layout_for(index)
        drawn = view.render_cache.pixmaps[view.render_cache.live_keys[reply.id]][0].toImage()
        part = bubbles._bubble_area(lay) & view.viewport().rect().translated(
            -view.visualRect(index).topLeft()
        )
        whole = bubbles._render_bubble(reply, lay, part)[0].toImage()
        assert drawn == whole, f"frame at {cut} chars of {text!r} differs from drawing it whole"


@pytest.mark.parametrize(
    "text", _GROWING, ids=["table", "code", "lists", "align", "fence", "task", "rule"]
)
def test_a_growing_reply_copies_unchanged_rows_and_looks_as_if_drawn_whole(
    qtbot: Any, view: ChatView, text: str
) -> None:
    _stream_and_compare(
        qtbot, view, text, list(range(1, len(text) + 1, 3 if len(text) > 100 else 1))
    )
    assert view.bubbles.rows_kept > 0, "every frame drew the whole reply again"


_PIECES = [
    "word ",
    "**b** ",
    "`c` ",
    "\n",
    "\n\n",
    "- ",
    "- [ ] ",
    "1. ",
    "# ",
    "---\n",
    "===\n",
    "| a | b |\n",
    "|---|---|\n",
    "|:-|-:|\n",
    "| x | `long cell text` |\n",
    "```py\n",
    "```\n",
    "x = 1\n",
    "> ",
    "  ",
    "[l](http://x.org) ",
    "http://example.com ",
    "~~s~~ ",
]


class _OneByOne:
    """A stand-in for `st.randoms()` that cuts a text after every character."""

    def randint(self, a: int, _b: int) -> int:
        return a


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(_PIECES), min_size=3, max_size=30), st.randoms())
# A table whose struck-through row ends it: the frame that finishes the table copies its rows
# as drawn straight onto the bubble, the whole drawing takes them from the group's pixmap.
@example(["| a | b |\n", "|---|---|\n", "~~s~~ ", "\n", "\n", "word "], _OneByOne())
def test_any_growing_reply_looks_as_if_drawn_whole(
    qtbot: Any, view: ChatView, pieces: list[str], rnd: Any
) -> None:
    text = "".join(pieces)
    cuts, cut = [], 0
    while cut < len(text):
        cut = min(len(text), cut + rnd.randint(1, 8))
        cuts.append(cut)
    _stream_and_compare(qtbot, view, text, cuts)


def test_a_code_block_coloured_as_the_next_one_opens_is_drawn_anew(
    qtbot: Any, view: ChatView
) -> None:
    # Between two frames the first block's fence closed (it gets its colours) and a second
    # block opened: both frames end inside a code block, the first block's text is the same.
    text = "| a |\n|---|\n| 1 |\n```py\nx = 1\n```\n```py\ny = 2\n"
    first = text.index("```\n```")
    _stream_and_compare(qtbot, view, text, [first, first + 7, len(text)])


def test_a_growing_code_block_draws_its_new_lines_not_all_of_it_again(
    qtbot: Any, view: ChatView
) -> None:
    # A code block being written can be a screen tall: drawing it all each frame took ~2 ms.
    code = "Code:\n\n```python\n" + "".join(f"total_{k} = compute({k})\n" for k in range(24))
    view.resize(640, 700)
    cuts = list(range(len(code) - 60, len(code) + 1, 6))
    kept = view.bubbles.rows_kept
    _stream_and_compare(qtbot, view, code, cuts)  # each frame looks as if drawn whole
    lines = 14 * 20  # rows of the block's first twenty lines, at the least
    assert view.bubbles.rows_kept - kept > (len(cuts) - 1) * lines, "earlier lines drawn again"


def test_a_growing_table_finds_its_unchanged_rows_without_comparing_every_cell(
    qtbot: Any, view: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Comparing every cell's block of two frames of a 24-row table took ~0.8 ms a frame.
    from desktop.ui.render import document

    compared: list[int] = []
    real = document.block_keys
    monkeypatch.setattr(document, "block_keys", lambda d: compared.append(1) or real(d))
    rows = "".join(f"| {r} | `item{r}` | {r * 7} |\n" for r in range(16))
    text = "Intro\n\n| # | name | value |\n|---|---|---|\n" + rows
    start = text.index("| 4 |")
    kept = view.bubbles.rows_kept
    _stream_and_compare(qtbot, view, text, list(range(start, len(text) + 1, 5)))
    assert view.bubbles.rows_kept > kept, "every frame drew the whole table again"
    assert compared == [], "every cell of two frames was compared"


def test_a_growing_paragraph_draws_its_new_lines_not_all_of_it_again(
    qtbot: Any, view: ChatView
) -> None:
    # A long paragraph being written is one block: drawn again whole each frame (~0.3 ms for
    # ten lines), though only its last line changes.
    text = "Intro.\n\n" + " ".join(f"word{k} **bold{k}**" for k in range(120))
    cuts = list(range(len(text) - 90, len(text) + 1, 9))
    kept = view.bubbles.rows_kept
    _stream_and_compare(qtbot, view, text, cuts)  # each frame looks as if drawn whole
    lines = 14 * 8  # rows of its first eight lines, at the least
    assert view.bubbles.rows_kept - kept > (len(cuts) - 1) * lines, "earlier lines drawn again"


_INLINE = st.sampled_from(
    [
        *("word", "longerword", "**bold", "bold**", "*it", "it*", "`code", "code`", "~~gone"),
        *("gone~~", "[link](http://x.org)", "http://example.com", "中文", "x_y", "\\*", "<b>"),
        *("&amp;", "**"),
    ]
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_INLINE, min_size=30, max_size=90), st.randoms())
def test_any_growing_paragraph_looks_as_if_drawn_whole(
    qtbot: Any, view: ChatView, words: list[str], rnd: Any
) -> None:
    # Its earlier lines are kept while their text, place and formats hold: an emphasis closed
    # later (**bold across lines**) changes them, and they are drawn again.
    text = "Intro.\n\n" + " ".join(words)
    cuts, cut = [], 8
    while cut < len(text):
        cut = min(len(text), cut + rnd.randint(1, 12))
        cuts.append(cut)
    _stream_and_compare(qtbot, view, text, cuts)


def test_a_table_finished_with_its_last_rows_is_not_drawn_whole_again(
    qtbot: Any, view: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    from desktop.ui.render import document

    rows = "".join(f"| {r} | `item{r}` |\n" for r in range(12))
    text = "Intro\n\n| # | name |\n|---|---|\n" + rows + "| 12 | `item12` |\n\nafter"
    _stream_and_compare(qtbot, view, text, [text.index("| 11 |")])
    bubbles, index = view.bubbles, view.chat_model.index(1)
    reply, kept = index.data(MESSAGE_ROLE), bubbles.rows_kept
    compared: list[int] = []  # every cell's block of two frames compared (~1.5 ms for 24 rows)
    real = document.block_keys
    monkeypatch.setattr(document, "block_keys", lambda d: compared.append(1) or real(d))
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text = text  # the last rows, the blank line that ends the table, a new paragraph
        view.update_message(reply)
    view.grab()
    lay = bubbles.layout_for(index)
    table = lay.head_docs[1][0]
    assert "item12" in table.toPlainText(), "the table is a finished group now"
    assert bubbles.rows_kept > kept, "its earlier rows were drawn again"
    assert id(table) not in view.render_cache.block_pixmaps, "the whole table was drawn again"
    assert compared == [], "found its unchanged rows by comparing every cell"
    drawn = view.render_cache.pixmaps[view.render_cache.live_keys[reply.id]][0].toImage()
    part = bubbles._bubble_area(lay) & view.viewport().rect().translated(
        -view.visualRect(index).topLeft()
    )
    assert drawn == bubbles._render_bubble(reply, lay, part)[0].toImage()


def test_a_code_block_closed_with_its_last_lines_is_not_drawn_whole_again(
    qtbot: Any, view: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As its fence closes, a screen of code became a group drawn whole into its picture (~2 ms)
    # though the last frame had drawn all but its last line.
    from desktop.ui.render import markdown

    parsed: list[str] = []
    real = markdown.render_markdown_fresh
    monkeypatch.setattr(
        markdown, "render_markdown_fresh", lambda t, *a, **k: parsed.append(t) or real(t, *a, **k)
    )
    view.resize(640, 700)
    lines = "".join(f"total_{k} = compute({k})\n" for k in range(20))
    text = "Intro\n\n```python\n" + lines + "last = 1\n```\n\nafter"
    _stream_and_compare(qtbot, view, text, [text.index("total_19")])
    bubbles, index = view.bubbles, view.chat_model.index(1)
    reply, kept = index.data(MESSAGE_ROLE), bubbles.rows_kept
    parsed.clear()
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text = text  # its last lines, the fence that closes it, a new paragraph
        view.update_message(reply)
    view.grab()
    lay = bubbles.layout_for(index)
    code = lay.head_docs[1][0]
    assert "last = 1" in code.toPlainText(), "the code block is a finished group now"
    assert not [t for t in parsed if "```" in t], "the closed block was parsed"
    assert bubbles.rows_kept - kept > 14 * 18, "its earlier lines were drawn again"
    assert id(code) not in view.render_cache.block_pixmaps, "the whole block was drawn again"
    drawn = view.render_cache.pixmaps[view.render_cache.live_keys[reply.id]][0].toImage()
    part = bubbles._bubble_area(lay) & view.viewport().rect().translated(
        -view.visualRect(index).topLeft()
    )
    assert drawn == bubbles._render_bubble(reply, lay, part)[0].toImage()


def test_a_code_block_that_closes_as_its_last_frame_showed_it_keeps_that_document(
    qtbot: Any, view: ChatView
) -> None:
    # Its fence closing made the block a group laid out anew (~1 ms for a screen of code) in
    # the frame that shows the fence, though the last frame had laid out the same code.
    view.resize(640, 700)
    lines = "".join(f"total_{k} = compute({k})\n" for k in range(20))
    text = "Intro\n\n```python\n" + lines + "last = 1\n```\n\nafter"
    _stream_and_compare(qtbot, view, text, [text.index("\n```\n\nafter")])
    bubbles, index = view.bubbles, view.chat_model.index(1)
    reply, before = index.data(MESSAGE_ROLE), bubbles.layout_for(index)
    kept = bubbles.rows_kept
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text = text  # the fence that closes it, a new paragraph
        view.update_message(reply)
    view.grab()
    lay = bubbles.layout_for(index)
    code = lay.head_docs[1][0]
    assert code is before.tail_doc, "the closed block was laid out again"
    assert "last = 1" in code.toPlainText() and only_code(code)
    assert bubbles.rows_kept - kept > 18 * 18, "its lines were drawn again"
    drawn = view.render_cache.pixmaps[view.render_cache.live_keys[reply.id]][0].toImage()
    part = bubbles._bubble_area(lay) & view.viewport().rect().translated(
        -view.visualRect(index).topLeft()
    )
    assert drawn == bubbles._render_bubble(reply, lay, part)[0].toImage()
    # And it still gets its colours in idle time, as a block laid out anew would.
    qtbot.waitUntil(lambda: not bubbles.colouring, timeout=5000)
    assert bubbles.layout_for(index).head_docs[1][0] is not code


def test_a_reply_streaming_while_its_link_is_down_says_so_under_its_text(
    qtbot: Any, view: ChatView
) -> None:
    # Its link gone, a reply stood still as if the model were thinking; the header alone
    # said "Reconnecting". The bubble says it too, drawn as a whole frame would be, and no
    # more once the link is back.
    from desktop.core.models import ConnectionState, ConnectionStatus

    text = "Intro\n\n| a | b |\n|---|---|\n| 1 | `two` |\n\nA paragraph being written"
    _stream_and_compare(qtbot, view, text, [len(text) - 8])
    bubbles, index = view.bubbles, view.chat_model.index(1)
    before = bubbles.layout_for(index)
    assert not before.waiting and before.error_rect is None
    for state, says in (
        (ConnectionState.RECONNECTING, "Not connected: reconnecting to get the rest"),
        # Paused by the user: nothing reconnects until they resume.
        (ConnectionState.PAUSED, "Paused: resume to get the rest of this reply"),
        (ConnectionState.FAILED, "Not connected: the rest of this reply comes once"),
        (ConnectionState.ONLINE, ""),
    ):
        view.set_link_status(ConnectionStatus(state, 1, 1))  # the row changes at once
        view.grab()
        lay = bubbles.layout_for(index)
        assert lay.waiting.startswith(says) and bool(says) is bool(lay.waiting), lay.waiting
        assert (lay.error_rect is not None) is bool(says)
        assert lay.bubble.height() > before.bubble.height() if says else lay == before
        reply = index.data(MESSAGE_ROLE)
        drawn = view.render_cache.pixmaps[view.render_cache.live_keys[reply.id]][0].toImage()
        part = bubbles._bubble_area(lay) & view.viewport().rect().translated(
            -view.visualRect(index).topLeft()
        )
        assert drawn == bubbles._render_bubble(reply, lay, part)[0].toImage()
    # A reply that is not streaming has nothing to wait for.
    reply.streaming = False
    with qtbot.wait_signal(view.chat_model.flushed):
        view.update_message(reply)
    view.set_link_status(ConnectionStatus(ConnectionState.RECONNECTING, 1, 2))
    assert not bubbles.layout_for(index).waiting


def test_a_reply_that_ends_keeps_its_layout_and_copies_what_its_last_frame_drew(
    qtbot: Any, view: ChatView
) -> None:
    # Laying a long reply out whole and drawing it again as it ends took ~15 ms, in the frame
    # that shows its last words (and before the next reply's first ones).
    rows = "".join(f"| {r} | `item{r}` |\n" for r in range(12))
    text = "Intro\n\n| # | name |\n|---|---|\n" + rows + "\nDone, with a last line."
    _stream_and_compare(qtbot, view, text, [len(text) - 8, len(text)])
    bubbles, index = view.bubbles, view.chat_model.index(1)
    reply = index.data(MESSAGE_ROLE)
    before, built, kept = bubbles.layout_for(index), bubbles.layouts_built, bubbles.rows_kept
    reply.streaming = False
    with qtbot.wait_signal(view.chat_model.flushed):
        view.update_message(reply)
    view.grab()
    ended = bubbles.layout_for(index)
    assert [d for d, _ in ended.head_docs] == [d for d, _ in before.head_docs], "laid out again"
    assert bubbles.layouts_built == built + 1
    assert bubbles.rows_kept > kept, "its last frame's rows were drawn again"
    rev = view.chat_model.revision_of(reply.id)
    drawn = {
        k: pix for k, (pix, _) in view.render_cache.pixmaps.items() if k[:2] == (reply.id, rev)
    }
    assert drawn, "not drawn"
    for key, pix in drawn.items():  # each part as if drawn whole, without a frame to copy
        part = QRect(*key[3:]) if len(key) > 3 else bubbles._bubble_area(ended)
        assert pix.toImage() == bubbles._render_bubble(reply, ended, part)[0].toImage()


def test_a_reply_finishing_while_another_streams_is_laid_out_whole_after(
    qtbot: Any, view: ChatView
) -> None:
    text = "Intro\n\n| a | b |\n|---|---|\n| 1 | `two` |\n\n```py\nx = 1\n```\n\nEnd"
    plain = assistant("a0", text)
    first = assistant("a1", "", streaming=True)
    view.show_messages([plain, first])
    for cut in range(7, len(text) + 1, 9):
        with qtbot.wait_signal(view.chat_model.flushed):
            first.text = text[:cut]
            view.update_message(first)
        view.grab()
    first.text, first.streaming = text, False
    second = assistant("a2", "Next", streaming=True)
    with qtbot.wait_signal(view.chat_model.flushed):
        view.update_message(first)  # it finished, and the next reply started: one batch
        view.update_message(second)
    view.grab()
    bubbles = view.bubbles
    kept = bubbles.layout_for(view.chat_model.index(1))
    assert kept.doc is None and kept.head_docs, "laid out whole again while another streamed"
    second.text, second.streaming = "Next reply", False
    with qtbot.wait_signal(view.chat_model.flushed):
        view.update_message(second)
    qtbot.wait_until(lambda: bubbles.layout_for(view.chat_model.index(1)).doc is not None)
    final = bubbles.layout_for(view.chat_model.index(1))
    whole = bubbles.layout_for(view.chat_model.index(0))
    assert final.head_docs == [] and final.doc is not None and whole.doc is not None
    assert final.doc.toHtml() == whole.doc.toHtml() and final.height == whole.height


def _count_colouring(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The code of every block coloured from now on, at once or a slice at a time."""
    from desktop.ui.render import markdown

    coloured: list[str] = []
    real, real_step = markdown.highlighted, markdown.Highlighting.step

    def step(self: markdown.Highlighting, budget: float) -> bool:
        before = self.html is not None
        done = real_step(self, budget)
        if done and not before:
            coloured.append(self._code)
        return done

    monkeypatch.setattr(markdown, "highlighted", lambda *a: coloured.append(a[0]) or real(*a))
    monkeypatch.setattr(markdown.Highlighting, "step", step)
    return coloured


def test_a_code_block_that_closes_is_coloured_in_idle_time_not_on_the_frame(
    qtbot: Any, view: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    coloured = _count_colouring(monkeypatch)
    code = "Code:\n\n```python\ndef f():\n    return 1\n"
    reply = assistant("a1", code, streaming=True)
    view.show_messages([user("u1", "hi"), reply])
    qtbot.wait_until(lambda: 1 in view.bubbles.painted_rows)
    view.bubbles._colour.stop()  # (the idle step held back: the frame alone is looked at)
    docs, index = view.render_cache.docs, view.chat_model.index(1)
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text = code + "```\n\nafter"
        view.update_message(reply)
    lay = view.bubbles.layout_for(index)
    assert coloured == [], "the closed block was coloured on the frame's path"
    block = lay.head_docs[1][0]
    assert "return 1" in block.toPlainText() and docs.colours_waiting()
    plain_html = block.toHtml()
    qtbot.wait_until(lambda: view.bubbles.layout_for(index).head_docs[1][0] is not block)
    assert coloured == ["def f():\n    return 1\n"] and not docs.colours_waiting()
    now = view.bubbles.layout_for(index).head_docs[1][0]
    assert now.toHtml() != plain_html, "the block got its colours"
    # Coloured, it is what the finished reply shows for that block.
    whole = bubble_layout._markdown_doc(
        Role.ASSISTANT,
        view.font(),
        now.textWidth(),
        view.bubbles.colors,
        render_markdown_fresh(
            "```python\ndef f():\n    return 1\n```\n\n",
            view.bubbles.colors.pygments_style,
            view.bubbles.colors.code_bg,
            view.bubbles.colors.text,
        ),
        fit=False,
    )
    assert now.toHtml() == whole.toHtml()
    # Each frame on the way (plain, then coloured) is drawn as the bubble drawn whole.
    _stream_and_compare(qtbot, view, code + "```\n\nafter and more", [len(code) + 3, len(code) + 9])


def test_code_coloured_before_is_shown_plain_as_it_closes_and_coloured_in_idle_time(
    qtbot: Any, view: ChatView
) -> None:
    # Drawn anew in colours on the frame its fence closes, a screen of code cost a layout and a
    # drawing of all of it in that frame, though its colours were known.
    code = "```python\ndef f():\n    return 1\n```"
    view.show_messages([assistant("a0", code)])  # its colours are known from now on
    qtbot.wait_until(lambda: 0 in view.bubbles.painted_rows)
    reply = assistant("a1", "Code:\n\n```python\ndef f():\n    return 1\n", streaming=True)
    view.show_messages([assistant("a0", code), reply])
    qtbot.wait_until(lambda: 1 in view.bubbles.painted_rows)
    view.bubbles._colour.stop()
    docs, index = view.render_cache.docs, view.chat_model.index(1)
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text += "```\n\nafter"
        view.update_message(reply)

    def colours(doc: Any) -> int:
        return len(set(re.findall(r"color:(#[0-9a-f]{6})", doc.toHtml())))

    block = view.bubbles.layout_for(index).head_docs[1][0]
    assert colours(block) == 1, "coloured on the frame it closed"
    assert docs.colours_waiting()
    qtbot.wait_until(lambda: colours(view.bubbles.layout_for(index).head_docs[1][0]) > 1)


def test_code_coloured_in_idle_time_draws_only_what_shows_of_it(qtbot: Any, view: ChatView) -> None:
    # Its colours change every pixel of it: drawn whole into its picture, a block taller than
    # the view cost a drawing of all of it, though a screen of it shows.
    lines = "".join(f"total_{k} = compute({k})\n" for k in range(60))
    reply = assistant("a1", "Code:\n\n```python\n" + lines, streaming=True)
    view.show_messages([user("u1", "hi"), reply])
    qtbot.wait_until(lambda: 1 in view.bubbles.painted_rows)
    docs, index = view.render_cache.docs, view.chat_model.index(1)
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text += "```\n\nafter"
        view.update_message(reply)
    view.grab()
    qtbot.wait_until(lambda: not docs.colours_waiting())
    view.grab()
    lay = view.bubbles.layout_for(index)
    code = lay.head_docs[1][0]
    assert code.size().height() > view.viewport().height(), "the block is taller than the view"
    assert id(code) not in view.render_cache.block_pixmaps, "all of it was drawn"
    drawn = view.render_cache.pixmaps[view.render_cache.live_keys[reply.id]][0].toImage()
    part = view.bubbles._bubble_area(lay) & view.viewport().rect().translated(
        -view.visualRect(index).topLeft()
    )
    assert drawn == view.bubbles._render_bubble(reply, lay, part)[0].toImage()


def test_replies_get_their_code_colours_one_per_turn_of_the_loop(
    qtbot: Any, view: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each reply laid out again in colours may lay out and draw a screen of code: all at once
    # (7 ms in bench._timeline) held up the deltas of a reply streaming meanwhile.
    code = "```python\ndef f():\n    return 1\n```\n\n"
    first = assistant("a1", "One:\n\n" + code + "end", streaming=True)
    second = assistant("a2", "Two:\n\n" + code + "more", streaming=True)
    view.show_messages([first, second])
    qtbot.wait_until(lambda: {0, 1} <= view.bubbles.painted_rows)
    view.bubbles._colour.stop()
    docs = view.render_cache.docs
    assert docs.colours_waiting() and set(docs.showing_plain()) == {"a1", "a2"}
    touched: list[str] = []
    real = view.chat_model.touch
    monkeypatch.setattr(view.chat_model, "touch", lambda i: touched.append(i) or real(i))
    while docs.colours_waiting():
        view.bubbles._colour_code()
    assert touched == [], "laid out again before the loop turned"
    view.bubbles._recolour_one()
    assert touched == [], "parsed and laid out in one turn of the loop"
    view.bubbles._recolour_one()
    assert touched == [], "its group and its bubble laid out in one turn of the loop"
    view.bubbles._recolour_one()
    assert touched == ["a2"], "more than one reply in one turn (the newest goes first)"
    qtbot.wait_until(lambda: touched == ["a2", "a1"])


def test_a_group_laid_out_again_in_colours_is_parsed_in_one_turn_and_laid_out_in_the_next(
    qapp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A screen of coloured code takes ~2 ms to parse and ~2 ms to lay out: in one turn of the
    # loop (~6 ms with the layout of the bubble after it) it held up the deltas streaming then.
    docs = bubble_layout.BubbleDocs()
    code = "".join(f"total_{k} = compute({k}, scale=2)  # step\n" for k in range(60))
    reply = assistant("a1", f"Code:\n\n```python\n{code}```\n\nafter", streaming=True)
    groups, _tail = docs.streaming_docs(reply, QFont(), 600.0, LIGHT)
    plain = groups[1]
    while docs.colours_waiting():
        docs.colour_step(0.05)
    steps: list[str] = []
    for name in ("_parsed", "_laid_out"):
        real = getattr(bubble_layout, name)
        monkeypatch.setattr(
            bubble_layout, name, lambda *a, _r=real, _n=name, **k: steps.append(_n) or _r(*a, **k)
        )
    assert docs.recolour_one({"a1"}) == "", "laid out in the turn that parsed it"
    assert steps == ["_parsed"]
    assert docs.streaming_docs(reply, QFont(), 600.0, LIGHT)[0][1] is plain, "shown half done"
    assert docs.recolour_one({"a1"}) == "", "its bubble laid out in the turn of the group's"
    assert steps == ["_parsed", "_laid_out"], "parsed again"
    assert docs.recolour_one({"a1"}) == "a1"  # (its bubble now)
    assert steps == ["_parsed", "_laid_out"]
    coloured = docs.streaming_docs(reply, QFont(), 600.0, LIGHT)[0][1]
    assert coloured is not plain and coloured.toPlainText() == plain.toPlainText()
    assert coloured.size() == plain.size(), "laid out unlike the group it replaces"
    assert docs.recolour_one({"a1"}) is None


def test_a_group_shown_without_its_links_is_not_laid_out_again_until_they_can_be(
    qapp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before the first paint a group with a bare link is shown as text (linkify's patterns not
    # compiled yet): laid out again before they are, it would be the same text, in every idle
    # step the reply streams through.
    from desktop.ui.render import markdown

    monkeypatch.setattr(markdown, "_LINKS_READY", False)
    docs = bubble_layout.BubbleDocs(at_start=True)
    reply = assistant("a1", "See example.com for details.\n\nand more", streaming=True)
    groups, _tail = docs.streaming_docs(reply, QFont(), 400.0, LIGHT)
    assert groups and "example.com" in groups[0].toPlainText()
    assert docs.colours_waiting() and docs.showing_plain() == ["a1"]
    assert docs.recolour_one({"a1"}) is None, "laid out again with its links still waiting"
    while docs.colours_waiting():
        docs.colour_step(0.05)
    assert docs.recolour_one({"a1"}) == ""  # (parsed: laid out on the next call)
    assert docs.recolour_one({"a1"}) == ""  # (laid out: its bubble on the next)
    assert docs.recolour_one({"a1"}) == "a1"
    docs.markdown.renders_final()
    assert docs.recolour_one({"a1"}) is None  # nothing else waits


def test_a_frame_of_a_streaming_reply_never_lays_out_its_code_in_colours(
    qtbot: Any, view: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A group laid out again in colours is a screen of code: done in the frame that shows the
    # reply's next words (its colours had come between two frames), that frame took ~6 ms.
    from desktop.ui.render import bubble_layout as layout_module

    reply = assistant(
        "a1", "Code:\n\n```python\ndef f():\n    return 1\n```\n\nafter", streaming=True
    )
    view.show_messages([user("u1", "hi"), reply])
    qtbot.wait_until(lambda: 1 in view.bubbles.painted_rows)
    view.bubbles._colour.stop()
    docs, index = view.render_cache.docs, view.chat_model.index(1)
    plain = view.bubbles.layout_for(index).head_docs[1][0]
    while docs.colours_waiting():
        view.bubbles._colour_code()
    view.bubbles._recolour.stop()  # (its idle step held back: a frame comes first)
    made: list[str] = []
    real = layout_module._markdown_doc
    monkeypatch.setattr(
        layout_module, "_markdown_doc", lambda *a, **k: made.append(a[4]) or real(*a, **k)
    )
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text += " more words"
        view.update_message(reply)
    view.grab()
    assert view.bubbles.layout_for(index).head_docs[1][0] is plain, "coloured in the frame"
    assert not [html for html in made if "return" in html], "the code was laid out in a frame"
    view.bubbles._recolour_one()  # idle time: parsed in colours,
    view.bubbles._recolour_one()  # then laid out,
    view.bubbles._recolour_one()  # then its bubble
    coloured = view.bubbles.layout_for(index).head_docs[1][0]
    assert coloured is not plain
    made.clear()
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text += " and more"
        view.update_message(reply)
    view.grab()
    assert view.bubbles.layout_for(index).head_docs[1][0] is coloured
    assert not [html for html in made if "return" in html], "the code was laid out in a frame"


def test_a_long_code_block_is_coloured_a_slice_at_a_time_as_it_would_be_at_once() -> None:
    # Lexing a screen of code takes ~10 ms: in one piece it would hold up the deltas of a reply
    # streaming meanwhile, so each step stops when its time is up and the rest waits.
    from desktop.ui.render.markdown import Highlighting, highlighted

    code = "".join(f"total_{k} = compute({k}, scale=2)  # step {k}\n" for k in range(80))
    job, steps = Highlighting(code, "python", "friendly"), 1
    while not job.step(0.0):
        steps += 1
    assert steps > 10, "coloured in one go, not in slices"
    assert job.html == highlighted(code, "python", "friendly"), "slices colour it differently"


def test_a_closed_code_block_waits_for_the_stream_to_pause_before_its_colours(
    qtbot: Any, view: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Colouring a block and laying it out again holds the UI thread ~10 ms: done while the
    # reply streams on, the next deltas would wait that long to show.
    from desktop.ui.chat import delegate

    coloured = _count_colouring(monkeypatch)
    monkeypatch.setattr(delegate, "COLOUR_QUIET_MS", 60_000)  # a pause that never comes
    code = "Code:\n\n```python\ndef f():\n    return 1\n```\n\nafter"
    reply = assistant("a1", code, streaming=True)
    view.show_messages([user("u1", "hi"), reply])
    for k in range(30):  # the reply streams on, frame after frame
        with qtbot.wait_signal(view.chat_model.flushed):
            reply.text += f" w{k}"
            view.update_message(reply)
        view.grab()
    assert coloured == [], "coloured while the reply still streamed"
    docs = view.render_cache.docs
    assert docs.colours_waiting()
    assert view.bubbles._colour.remainingTime() > 50_000, "each frame starts the wait again"
    monkeypatch.setattr(delegate, "COLOUR_QUIET_MS", 0)  # the stream pauses
    with qtbot.wait_signal(view.chat_model.flushed):
        reply.text += " paused"
        view.update_message(reply)
    qtbot.wait_until(lambda: not docs.colours_waiting())
    assert coloured == ["def f():\n    return 1\n"]


def test_a_stream_that_never_pauses_still_gets_its_colours_after_the_longest_wait(
    qtbot: Any, view: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Real token pacing (a delta every 10-30 ms) may never leave a 120 ms pause: the closed
    # block is coloured COLOUR_LONGEST_WAIT_MS after it closed, while the reply still streams.
    from desktop.ui.chat import delegate

    coloured = _count_colouring(monkeypatch)
    monkeypatch.setattr(delegate, "COLOUR_QUIET_MS", 60_000)  # a pause that never comes
    clock = [100.0]
    view.bubbles._now = lambda: clock[0]
    code = "Code:\n\n```python\ndef f():\n    return 1\n```\n\nafter"
    reply = assistant("a1", code, streaming=True)
    view.show_messages([user("u1", "hi"), reply])
    docs = view.render_cache.docs

    def frame(word: str) -> None:
        with qtbot.wait_signal(view.chat_model.flushed):
            reply.text += f" {word}"
            view.update_message(reply)
        view.grab()

    for k in range(5):
        clock[0] += 0.03
        frame(f"w{k}")
    assert coloured == [] and docs.colours_waiting()
    clock[0] += delegate.COLOUR_LONGEST_WAIT_MS / 1000  # the stream went on, never pausing
    frame("late")
    qtbot.wait_until(lambda: not docs.colours_waiting())
    assert coloured == ["def f():\n    return 1\n"]
    assert reply.streaming, "coloured while the reply still streams"


def test_each_frame_scans_the_last_block_group_not_the_whole_reply(
    qtbot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from desktop.ui.render import markdown

    scanned: list[int] = []  # characters looked at to find the block groups, per frame
    real = markdown.stream_chunks

    def counting(text: str) -> tuple[list[str], str]:
        scanned[-1] += len(text)
        return real(text)

    monkeypatch.setattr(markdown, "stream_chunks", counting)
    docs = bubble_layout.BubbleDocs()
    font = ChatView().font()
    reply = assistant("a1", "", streaming=True)
    for n in range(1, 80):
        for cut in (20, len(_paragraph(n))):  # two frames a paragraph
            reply.text = "".join(_paragraph(i) for i in range(1, n)) + _paragraph(n)[:cut]
            scanned.append(0)
            lay = bubble_layout.build_layout(reply, 640, font, LIGHT, frozenset(), docs=docs)
    # A long reply (~16,000 characters by now): each frame scans a paragraph or two.
    assert len(reply.text) > 15_000
    assert max(scanned[-40:]) < 3 * len(_paragraph(80)), scanned[-40:]
    assert len(lay.head_docs) == 78  # (the last paragraph is still the block being written)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from([*_ATOMS, "| a |", "~~~\n", "\t"]), max_size=4), max_size=25)
)
def test_block_groups_of_a_growing_text_are_those_of_the_text_scanned_whole(
    steps: list[list[str]],
) -> None:
    from desktop.ui.render.markdown import ChunkScan

    scan, text = ChunkScan(), ""
    for atoms in steps:
        text += "".join(atoms)
        assert scan.scan(text) == stream_chunks(text)
    text = text[: len(text) // 2] + "- x\n"  # replaced, not grown: scanned whole again
    assert scan.scan(text) == stream_chunks(text)


def test_the_paragraph_after_a_finished_table_draws_no_table_again(
    qtbot: Any, view: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each frame of the paragraph after a table drew the table anew (its band began where the
    # table ends, which counted as touching it): ~2 ms a frame for a 24-row table.
    rows = "".join(f"| {r} | `item{r}` | {r * 7} |\n" for r in range(24))
    table = "Here:\n\n| # | name | value |\n|---|---|---|\n" + rows + "\nNow"
    reply = assistant("a1", table, streaming=True)
    view.show_messages([user("u1", "hi"), reply])
    qtbot.wait_until(lambda: 1 in view.bubbles.painted_rows)
    view.grab()
    tables: list[int] = []  # the table drawn, frame by frame
    draw = type(view.bubbles)._draw_doc

    def counting(self: Any, painter: Any, doc: Any, *args: Any, **kw: Any) -> None:
        if "item23" in doc.toPlainText():
            tables[-1] += 1
        draw(self, painter, doc, *args, **kw)

    monkeypatch.setattr(type(view.bubbles), "_draw_doc", counting)
    for word in (" the", " code", " is", " next"):  # (the bubble does not widen)
        tables.append(0)
        with qtbot.wait_signal(view.chat_model.flushed):
            reply.text += word
            view.update_message(reply)
        view.grab()
    assert tables == [0, 0, 0, 0], f"the finished table drawn again: {tables}"
    assert view.bubbles.rows_kept > 0
