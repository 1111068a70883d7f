"""A table streaming in a row at a time: each frame parses the row being written (and the rows
finished since the last frame), never the whole table again; it reads exactly as rendered
whole. Counted in characters handed to the markdown parser, not timed."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QPointF

from desktop.core.models import Role
from desktop.ui.chat.view import ChatView
from desktop.ui.render import bubble_layout, markdown
from desktop.ui.render.document import _cell_rect
from desktop.ui.render.markdown import TABLE_BORDER, MarkdownCache, render_markdown_fresh
from desktop.ui.theme import LIGHT
from tests.ui.fakes import assistant, user

HEAD = "| # | name | value |\n|---|:-:|--:|\n"


def _row(r: int) -> str:
    return f"| {r} | `item{r}` with **bold** | {r * 7} |\n"


def test_each_frame_of_a_growing_table_parses_its_new_rows_only(
    qtbot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[int] = []  # characters handed to the parser (blocks or a cell's inline), per frame
    for name in ("render_markdown_fresh", "render_inline_fresh"):
        real = getattr(markdown, name)

        def counting(text: str, *args: Any, _real: Any = real, **kw: Any) -> str:
            parsed[-1] += len(text)
            return str(_real(text, *args, **kw))

        monkeypatch.setattr(markdown, name, counting)
    docs = bubble_layout.BubbleDocs()
    font = ChatView().font()
    reply = assistant("a1", "", streaming=True)
    intro = "Here is the table:\n\n"
    rows = 60
    for r in range(rows):
        done = intro + HEAD + "".join(_row(i) for i in range(r))
        for shown in (done + _row(r)[:9], done + _row(r)):  # two frames a row: half, whole
            reply.text = shown
            parsed.append(0)
            lay = bubble_layout.build_layout(reply, 640, font, LIGHT, frozenset(), docs=docs)
    table_chars = len(HEAD) + sum(len(_row(r)) for r in range(rows))
    # Whole-table parsing would hand the parser the whole table (thousands of characters) on
    # each of the late frames; row by row it is a row or two under the header.
    assert max(parsed[-20:]) < 4 * (len(HEAD) + len(_row(rows))), parsed[-20:]
    assert sum(parsed) < 3 * table_chars + 2 * rows * len(HEAD) * 2
    # And it reads as the table rendered whole.
    assert lay.tail_doc is not None
    whole = MarkdownCache().fresh(HEAD + "".join(_row(r) for r in range(rows)), "", "", "")
    assert (
        lay.tail_doc.toPlainText()
        == bubble_layout._markdown_doc(Role.ASSISTANT, font, 640, LIGHT, whole).toPlainText()
    )


_CELL = st.lists(
    st.sampled_from(
        [
            "a",
            " ",
            "`x`",
            "**b**",
            "\\|",
            "|",
            "-",
            ":",
            "http://x.io",
            "~~s~~",
            "[l](u)",
            "<b>",
            "&",
            "\t",
            "#",
            ">",
        ]
    ),
    max_size=8,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    cols=st.integers(1, 4),
    aligns=st.lists(st.sampled_from(["---", ":-:", "--:", ":--", " - "]), min_size=4, max_size=4),
    rows=st.lists(_CELL, min_size=1, max_size=5),
    end=st.sampled_from(["", "\n", "\n\n"]),
)
def test_a_table_from_its_rows_is_the_table_rendered_whole(
    cols: int, aligns: list[str], rows: list[str], end: str
) -> None:
    head = "|" + "|".join(f" h{i} " for i in range(cols)) + "|\n|" + "|".join(aligns[:cols]) + "|"
    text = "\n".join([head, *("|" + r for r in rows)]) + end
    cache = MarkdownCache()
    by_rows = cache.tables.html(text)
    if by_rows is not None:
        assert by_rows == render_markdown_fresh(text, "friendly", "#eee", "#111")
    assert cache.fresh(text, "friendly", "#eee", "#111") == render_markdown_fresh(
        text, "friendly", "#eee", "#111"
    )


def test_a_finished_table_keeps_the_document_its_last_frame_laid_out(qtbot: Any) -> None:
    # The frame a table finishes on (the next paragraph begins) made its group anew, parsed
    # and laid out whole: the slowest frame of a streaming reply. The block being written,
    # as the last frame laid it out, is that group already.
    docs = bubble_layout.BubbleDocs()
    font = ChatView().font()
    reply = assistant("a1", "", streaming=True)
    table = "Here is the table:\n\n" + HEAD + "".join(_row(r) for r in range(12))
    reply.text = table
    before = bubble_layout.build_layout(reply, 640, font, LIGHT, frozenset(), docs=docs)
    reply.text = table + "\nAnd now"
    after = bubble_layout.build_layout(reply, 640, font, LIGHT, frozenset(), docs=docs)
    assert before.tail_doc is not None and after.tail_doc is not None
    assert after.head_docs[-1][0] is before.tail_doc
    assert after.tail_doc.toPlainText().strip() == "And now"
    whole = MarkdownCache().fresh(HEAD + "".join(_row(r) for r in range(12)), "", "", "")
    assert (
        after.head_docs[-1][0].toPlainText()
        == bubble_layout._markdown_doc(Role.ASSISTANT, font, 640, LIGHT, whole).toPlainText()
    )


def test_a_tables_lines_are_one_pixel_of_one_colour_between_cells_of_the_bubbles(
    qtbot: Any,
) -> None:
    # Its lines are the table's background showing between its cells, which take the
    # bubble's colour, in a user's bubble, a reply's and a reply still writing the table.
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(640, 600)
    with qtbot.waitExposed(view):
        view.show()
    text = "Rows:\n\n" + HEAD + _row(0) + _row(1) + _row(2)
    writing = assistant("a2", text + "| 3 | `ite", streaming=True)
    view.show_messages([user("u1", text), assistant("a1", text), writing])
    qtbot.wait_until(lambda: view.bubbles.painted_rows >= {0, 1, 2})
    shot = view.viewport().grab().toImage()
    colors = view.bubbles.colors
    for row, fill in (
        (0, colors.user_bubble),
        (1, colors.assistant_bubble),
        (2, colors.assistant_bubble),
    ):
        index = view.chat_model.index(row)
        doc, pos = view.bubbles.layout_for(index).text_docs()[-1]
        table = doc.rootFrame().childFrames()[0]
        at = QPointF(view.visualRect(index).topLeft()) + pos
        cell, right, below = (_cell_rect(doc, table, *rc) for rc in ((1, 0), (1, 1), (2, 0)))
        across = [
            shot.pixelColor(x, round(at.y() + cell.center().y())).name()
            for x in range(math.ceil(at.x() + cell.right()), math.floor(at.x() + right.left()))
        ]
        down = [
            shot.pixelColor(round(at.x() + cell.center().x()), y).name()
            for y in range(math.ceil(at.y() + cell.bottom()), math.floor(at.y() + below.top()))
        ]
        for gap in (across, down):  # cell padding, one line, cell padding
            assert gap.count(TABLE_BORDER) == 1, (row, gap)
            assert set(gap) == {fill, TABLE_BORDER}, (row, gap)
