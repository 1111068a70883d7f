"""A QTextDocument that never loads external resources, and helpers to find its code blocks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from PySide6.QtCore import QObject, QRectF, QUrl
from PySide6.QtGui import (
    QTextBlock,
    QTextBlockFormat,
    QTextCharFormat,
    QTextDocument,
    QTextFormat,
    QTextFrame,
    QTextTable,
)

from desktop.ui.render.markdown import CODE_CELL_PADDING


class SafeDocument(QTextDocument):
    """Rich text for one message; refuses every resource, so remote images are never fetched."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.refused: list[str] = []
        # Set when the text is narrower than the document was laid out to (see used_width).
        self.text_width: float | None = None
        # Its code blocks' rects once laid out for good (a finished block is reused per frame).
        self.code_rects: list[QRectF] | None = None
        # Whether it holds a markdown table (see has_table), and whether it is one table and
        # nothing else (see only_table), once looked at.
        self.tables: bool | None = None
        self.table_alone: bool | None = None
        # A block being written that ends inside a code block (drawn without colours yet),
        # and how many code blocks it closes (coloured once closed).
        self.open_fence = False
        self.fences = 0
        # Whether a code block it closes is shown plain until idle time colours it.
        self.plain_code = False
        # Its blocks' text, place and formats once compared (see block_keys).
        self.block_keys: list[Any] | None = None
        # Whether it starts with a table or code block (see group_gap), once looked at.
        self.frame_first: bool | None = None
        # Whether its HTML was empty (a group of blank lines: it takes no room, see group_gap).
        self.blank = False
        # A code block alone, shown plain (being written, or closed and not coloured yet):
        # (its fence line, its code) (see code_unchanged_above).
        self.code_alone: tuple[str, str] | None = None
        # A closed code block alone, plain or coloured (see only_code).
        self.code_block = False
        # Whether it draws nothing past its used width, once looked at (see draws_within).
        self.within: bool | None = None
        # A table being written, alone: its lines (see table_unchanged_above).
        self.table_lines: list[str] | None = None

    def loadResource(self, type: int, name: QUrl | str) -> Any:
        # Every resource: http(s) would leak the user's IP, file:// would read local files.
        self.refused.append(name.toString() if isinstance(name, QUrl) else str(name))
        return None


def used_width(doc: QTextDocument) -> float:
    """How wide a document's content is: its text width unless it was left wider."""
    narrow = doc.text_width if isinstance(doc, SafeDocument) else None
    return narrow if narrow is not None else doc.size().width()


def code_block_rects(doc: QTextDocument) -> list[QRectF]:
    """Bounding rects of the code-block tables, in document order (markdown tables excluded)."""
    if isinstance(doc, SafeDocument) and doc.code_rects is not None:
        return doc.code_rects
    layout = doc.documentLayout()
    rects: list[QRectF] = []

    def walk(frame: QTextFrame) -> None:
        for child in frame.childFrames():
            if isinstance(child, QTextTable) and is_code_block(child):
                rects.append(layout.frameBoundingRect(child))
            walk(child)

    walk(doc.rootFrame())
    return rects


def is_code_block(table: QTextTable) -> bool:
    """Whether a table holds a code block (one cell, the code padding), not a markdown table."""
    return (
        table.rows() == 1
        and table.columns() == 1
        and table.format().cellPadding() == CODE_CELL_PADDING
    )


# A changed block can repaint this far above its text: a table cell's padding and the border
# above it (a new row turns the table's bottom border into the line between two rows).
REDRAW_MARGIN = float(CODE_CELL_PADDING + 2)


def has_table(doc: QTextDocument) -> bool:
    """Whether a document holds a markdown table (not only code blocks); cached per document."""
    known = doc.tables if isinstance(doc, SafeDocument) else None
    if known is not None:
        return known

    def walk(frame: QTextFrame) -> bool:
        return any(
            (isinstance(child, QTextTable) and not is_code_block(child)) or walk(child)
            for child in frame.childFrames()
        )

    found = walk(doc.rootFrame())
    if isinstance(doc, SafeDocument):
        doc.tables = found
    return found


def draws_within(doc: QTextDocument) -> bool:
    """Whether a document draws nothing past its used width (see used_width): no rule (drawn
    across the whole text width) and no line longer than it has room for; once per document."""
    known = doc.within if isinstance(doc, SafeDocument) else None
    if known is None:
        rule = QTextFormat.Property.BlockTrailingHorizontalRulerWidth
        known = doc.size().width() <= doc.textWidth() + 0.5 and (
            only_code(doc)
            or only_table(doc)  # (a table's cells hold no rule: no walk over its blocks)
            or not any(_blocks_with(doc, rule))
        )
        if isinstance(doc, SafeDocument):
            doc.within = known
    return known


def only_code(doc: QTextDocument) -> bool:
    """Whether a document is one code block and nothing else (a closed one, or one being
    written: see code_block and code_alone)."""
    return isinstance(doc, SafeDocument) and (doc.code_block or doc.code_alone is not None)


def only_table(doc: QTextDocument) -> bool:
    """Whether a document is one markdown table and nothing else (no list, rule or code);
    cached per document (a finished table is asked at every frame of the reply after it)."""
    known = doc.table_alone if isinstance(doc, SafeDocument) else None
    if known is None and isinstance(doc, SafeDocument) and doc.table_lines is not None:
        known = _table_alone(doc, doc.table_lines) is not None  # (no walk over its blocks)
    if known is None:
        known = _only_table(doc)
        if isinstance(doc, SafeDocument):
            doc.table_alone = known
    return known


def _only_table(doc: QTextDocument) -> bool:
    frames = doc.rootFrame().childFrames()
    if len(frames) != 1 or not isinstance(frames[0], QTextTable) or is_code_block(frames[0]):
        return False
    table = frames[0]
    rule = QTextFormat.Property.BlockTrailingHorizontalRulerWidth
    outside = [
        key
        for key, block in zip(block_keys(doc), _blocks(doc), strict=True)
        if not table.firstPosition() <= block.position() <= table.lastPosition()
    ]
    return all(not text and not fmt.hasProperty(rule) for text, _r, fmt, _c, _l in outside) and all(
        listed is None for *_rest, listed in block_keys(doc)
    )


def _blocks_with(doc: QTextDocument, prop: QTextFormat.Property) -> Iterator[QTextBlock]:
    """The blocks of a document whose format sets `prop`."""
    block = doc.begin()
    while block.isValid():
        if block.blockFormat().hasProperty(prop):
            yield block
        block = block.next()


def _blocks(doc: QTextDocument) -> list[QTextBlock]:
    out = []
    block = doc.begin()
    while block.isValid():
        out.append(block)
        block = block.next()
    return out


def unchanged_above(old: QTextDocument, new: QTextDocument) -> float:
    """How far down two documents draw the same pixels (0 when nothing is shared).

    Blocks are compared in order (text, place, block and list formats); everything above the
    first that differs, less REDRAW_MARGIN, is drawn alike. What later markdown changes about
    an earlier block (a setext underline, a table's alignment row, a loose list, a task item
    turning its list's bullets off) changes its text, place or formats; inline formats follow
    from a block's own text, but for a code block's colours, which come when its fence closes
    (told by `SafeDocument.open_fence` and `fences`).
    """
    if (
        old.textWidth() != new.textWidth()
        or old.size().width() != new.size().width()  # wider content: a rule reaches further
        or old.idealWidth() != new.idealWidth()
        or old.documentMargin() != new.documentMargin()
        or old.defaultFont() != new.defaultFont()
        or getattr(old, "open_fence", None) != getattr(new, "open_fence", None)
        or getattr(old, "fences", None) != getattr(new, "fences", None)
        or getattr(old, "plain_code", None) != getattr(new, "plain_code", None)
    ):
        return 0.0
    keys_old, keys_new = block_keys(old), block_keys(new)
    for key_old, key_new in zip(keys_old, keys_new, strict=False):
        if key_old != key_new:
            return max(0.0, min(key_old[1][1], key_new[1][1]) - REDRAW_MARGIN)
    # One is the other and more: the first block past the shared ones is where they part.
    shared = min(len(keys_old), len(keys_new))
    ends = [old.size().height(), new.size().height()]
    ends += [keys[shared][1][1] for keys in (keys_old, keys_new) if len(keys) > shared]
    return max(0.0, min(ends) - REDRAW_MARGIN)


def code_unchanged_above(old: QTextDocument, new: QTextDocument) -> float | None:
    """`unchanged_above` of two frames of one code block shown plain (being written, or just
    closed), None for others: its lines never wrap, so every line before the one the older
    frame was writing is where it was, alike. Found from the code, not by comparing every
    line's block (a screen of code took ~0.5 ms to compare, ~2 ms to draw again)."""
    was = old.code_alone if isinstance(old, SafeDocument) else None
    now = new.code_alone if isinstance(new, SafeDocument) else None
    if (
        was is None
        or now is None
        or was[0] != now[0]
        or old.textWidth() != new.textWidth()
        or old.size().width() != new.size().width()
        or new.size().width() > new.textWidth() + 0.5  # a line too long for the bubble
        or old.defaultFont() != new.defaultFont()
    ):
        return None
    done = was[1][: was[1].rfind("\n") + 1]  # its finished lines
    frames = old.rootFrame().childFrames()
    if not now[1].startswith(done) or len(frames) != 1 or not isinstance(frames[0], QTextTable):
        return None
    # Its lines as drawn: not the code's trailing line ends (see markdown._code_html), nor a
    # line end that starts it (HTML drops one right after <pre>).
    skipped = 1 if was[1].startswith("\n") else 0
    drawn = was[1].rstrip("\n").count("\n") + 1 - skipped
    index = min(done.count("\n") - skipped, drawn - 1)
    if index <= 0:
        return 0.0
    first = frames[0].cellAt(0, 0).firstCursorPosition().block()
    line = old.findBlockByNumber(first.blockNumber() + index)
    if not line.isValid():
        return None
    return max(0.0, old.documentLayout().blockBoundingRect(line).y() - REDRAW_MARGIN)


def paragraph_unchanged_above(old: QTextDocument, new: QTextDocument) -> float | None:
    """`unchanged_above` of two frames of one paragraph being written (None for others): a
    line breaks where the words before its end let it (the next words never move it), so each
    line of the older frame but its last is drawn alike when the newer one has it with the
    same text, place and formats. Line by line, not block by block: a paragraph is one block,
    and was drawn again whole each frame (~0.3 ms for ten lines)."""
    if (
        not is_paragraph(old)
        or not is_paragraph(new)
        or old.textWidth() != new.textWidth()
        or old.defaultFont() != new.defaultFont()
    ):
        return None
    block_a, block_b = old.begin(), new.begin()
    if block_a.blockFormat() != block_b.blockFormat():
        return None
    lines_a, lines_b = block_a.layout(), block_b.layout()
    text_a, text_b = block_a.text(), block_b.text()
    frags_a, frags_b = _fragments(block_a), _fragments(block_b)
    top = old.documentLayout().blockBoundingRect(block_a).y()
    same = top
    for i in range(min(lines_a.lineCount() - 1, lines_b.lineCount())):
        a, b = lines_a.lineAt(i), lines_b.lineAt(i)
        start, length = a.textStart(), a.textLength()
        end = start + length
        if (
            (start, length, a.y(), a.height(), a.naturalTextWidth())
            != (b.textStart(), b.textLength(), b.y(), b.height(), b.naturalTextWidth())
            or text_a[start:end] != text_b[start:end]
            or _cut(frags_a, end) != _cut(frags_b, end)
        ):
            break
        same = top + a.y() + a.height()
    return max(0.0, same - REDRAW_MARGIN)


def is_paragraph(doc: QTextDocument) -> bool:
    """Whether a document is one paragraph of text and nothing else (no table, list or rule)."""
    if not isinstance(doc, SafeDocument) or doc.blockCount() != 1 or doc.rootFrame().childFrames():
        return False
    block = doc.begin()
    rule = QTextFormat.Property.BlockTrailingHorizontalRulerWidth
    return block.textList() is None and not block.blockFormat().hasProperty(rule)


def _fragments(block: QTextBlock) -> list[tuple[int, int, QTextCharFormat]]:
    """A block's runs of one format: (start in the block, length, format)."""
    out = []
    it = block.begin()
    base = block.position()
    while not it.atEnd():
        fragment = it.fragment()
        if fragment.isValid():
            out.append((fragment.position() - base, fragment.length(), fragment.charFormat()))
        it += 1
    return out


def _cut(
    fragments: list[tuple[int, int, QTextCharFormat]], end: int
) -> list[tuple[int, int, QTextCharFormat]]:
    """The runs of `fragments` before `end`, the last one cut there."""
    out = []
    for start, length, fmt in fragments:
        if start >= end:
            break
        out.append((start, min(length, end - start), fmt))
    return out


def table_unchanged_above(old: QTextDocument, new: QTextDocument) -> float | None:
    """`unchanged_above` of two frames of one table being written, alone (None for others):
    the rows before the one the older frame was writing have the same text, and with every
    column as wide as it was (its header cells where they were) they lay out alike. Found from
    the rows' text and the header's cells, not by comparing every cell's block (~0.8 ms for a
    24-row table, a frame's worth of its budget)."""
    was = old.table_lines if isinstance(old, SafeDocument) else None
    now = new.table_lines if isinstance(new, SafeDocument) else None
    if (
        was is None
        or now is None
        or now[: len(was) - 1] != was[:-1]
        or old.textWidth() != new.textWidth()
        or old.size().width() != new.size().width()
        or old.idealWidth() != new.idealWidth()
        or old.defaultFont() != new.defaultFont()
    ):
        return None
    before, after = _table_alone(old, was), _table_alone(new, now)
    if before is None or after is None or before.columns() != after.columns():
        return None
    for column in range(before.columns()):
        a = _cell_rect(old, before, 0, column)
        b = _cell_rect(new, after, 0, column)
        if (a.x(), a.y(), a.width()) != (b.x(), b.y(), b.width()):
            return None  # a column is wider or narrower: every row moved
    return max(0.0, _cell_rect(old, before, len(was) - 2, 0).y() - REDRAW_MARGIN)


def _cell_rect(doc: QTextDocument, table: QTextTable, row: int, column: int) -> QRectF:
    block = table.cellAt(row, column).firstCursorPosition().block()
    return doc.documentLayout().blockBoundingRect(block)


def _table_alone(doc: QTextDocument, lines: list[str]) -> QTextTable | None:
    """The table a document holding a table's `lines` alone lays out, one row per line but
    the delimiter's; None when it is not that."""
    frames = doc.rootFrame().childFrames()
    if len(frames) != 1 or not isinstance(frames[0], QTextTable) or is_code_block(frames[0]):
        return None
    return frames[0] if frames[0].rows() == len(lines) - 1 else None


_BlockKey = tuple[str, tuple[float, float, float, float], QTextBlockFormat, QTextCharFormat, Any]


def block_keys(doc: QTextDocument) -> list[_BlockKey]:
    """Each block's text, place and formats, in order; worked out once per document (a frame
    compares the block being written with the one before, which was the new one then)."""
    known = doc.block_keys if isinstance(doc, SafeDocument) else None
    if known is not None:
        return known
    layout = doc.documentLayout()
    keys: list[_BlockKey] = []
    block = doc.begin()
    while block.isValid():
        listed = block.textList()
        rect = layout.blockBoundingRect(block)
        keys.append(
            (
                block.text(),
                (rect.x(), rect.y(), rect.width(), rect.height()),
                block.blockFormat(),
                block.charFormat(),
                None if listed is None else listed.format(),
            )
        )
        block = block.next()
    if isinstance(doc, SafeDocument):
        doc.block_keys = keys
    return keys


def group_gap(above: QTextDocument, below: QTextDocument) -> float:
    """The room the whole text's layout leaves between two of its block groups laid out apart.

    A document leaves out its first block's top margin and its last block's bottom margin;
    the whole text puts the larger of the two between those blocks. A group that starts with
    a table or a code block (a frame) brings its own margin, in its height already. (Stacked
    this way, groups sit where the whole text puts them: a streaming reply's paragraphs are
    spaced as the finished reply's, and it does not move when it is laid out whole.)
    """
    if _frame_first(below):
        return 0.0
    return max(
        above.lastBlock().blockFormat().bottomMargin(), below.begin().blockFormat().topMargin()
    )


def _frame_first(doc: QTextDocument) -> bool:
    known = doc.frame_first if isinstance(doc, SafeDocument) else None
    if known is None:
        frames = doc.rootFrame().childFrames()
        known = bool(frames) and frames[0].firstPosition() <= 1 and not doc.begin().text()
        if isinstance(doc, SafeDocument):
            doc.frame_first = known
    return known
