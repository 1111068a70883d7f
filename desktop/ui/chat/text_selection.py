"""Text selected inside one painted bubble: its ends as (document, position) and their text."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QTextCursor, QTextDocument

# An end of a selection: (which of the message's text documents, character position in it).
Spot = tuple[int, int]
Docs = list[tuple[QTextDocument, QPointF]]


@dataclass(slots=True)
class TextSelection:
    """A selection inside one message's text; `anchor` stays put, `focus` follows the user.

    Positions are kept as numbers, not QTextCursors: the documents are rebuilt when the
    message changes or the window is resized, and numbers stay meaningful across that.
    """

    message_id: str
    anchor: Spot
    focus: Spot

    @property
    def empty(self) -> bool:
        return self.anchor == self.focus

    def ordered(self) -> tuple[Spot, Spot]:
        return (self.anchor, self.focus) if self.anchor <= self.focus else (self.focus, self.anchor)

    def range_in(self, doc_index: int, doc: QTextDocument) -> tuple[int, int] | None:
        """The selected characters of one document, or None when none of it is selected."""
        (d0, p0), (d1, p1) = self.ordered()
        if self.empty or not d0 <= doc_index <= d1:
            return None
        end = last_position(doc)
        start = min(p0, end) if doc_index == d0 else 0
        stop = min(p1, end) if doc_index == d1 else end
        return (start, stop) if stop > start else None

    def cursor_in(self, doc_index: int, doc: QTextDocument) -> QTextCursor | None:
        """A QTextCursor over the selected part of one document (for painting or copying)."""
        span = self.range_in(doc_index, doc)
        if span is None:
            return None
        cursor = QTextCursor(doc)
        cursor.setPosition(span[0])
        cursor.setPosition(span[1], QTextCursor.MoveMode.KeepAnchor)
        return cursor

    def text(self, docs: Docs) -> str:
        """The selected text as plain text (paragraphs and table cells on their own lines)."""
        parts: list[str] = []
        for i, (doc, _pos) in enumerate(docs):
            cursor = self.cursor_in(i, doc)
            if cursor is not None:
                # Qt separates paragraphs with U+2029 and line breaks with U+2028.
                text = cursor.selection().toPlainText()
                parts.append(text.replace("\u2029", "\n").replace("\u2028", "\n"))
        joined = "\n\n".join(p.strip("\n") for p in parts if p)
        if "\n" not in joined:
            # A part of one line as selected, less the space a word-wise selection (Ctrl+Shift+
            # Right, a drag past a word's end) takes after its last word.
            return joined.rstrip()
        return "\n".join(line.rstrip() for line in joined.split("\n"))


def last_position(doc: QTextDocument) -> int:
    """The position after the last character of a document."""
    return max(0, doc.characterCount() - 1)


def hit(docs: Docs, point: QPointF) -> Spot | None:
    """The text position under a point (row coordinates), or None when it is not over text."""
    for i, (doc, pos) in enumerate(docs):
        local = point - pos
        size = doc.size()
        if 0 <= local.x() <= size.width() and 0 <= local.y() <= size.height():
            at = doc.documentLayout().hitTest(local, Qt.HitTestAccuracy.FuzzyHit)
            return (i, max(0, at))
    return None


def nearest(docs: Docs, point: QPointF) -> Spot:
    """The text position nearest a point: a drag past the text selects up to its edge."""
    if not docs:
        return (0, 0)
    for i, (doc, pos) in enumerate(docs):
        local = point - pos
        height = doc.size().height()
        if local.y() < 0:
            return (i, 0)
        if local.y() <= height:
            x = min(max(local.x(), 0.0), doc.size().width())
            at = doc.documentLayout().hitTest(QPointF(x, local.y()), Qt.HitTestAccuracy.FuzzyHit)
            return (i, max(0, at))
    last = len(docs) - 1
    return (last, last_position(docs[last][0]))


def word_at(docs: Docs, spot: Spot) -> tuple[Spot, Spot]:
    """The word around a position (a double click), as (start, end)."""
    doc = docs[spot[0]][0]
    cursor = QTextCursor(doc)
    cursor.setPosition(min(spot[1], last_position(doc)))
    cursor.select(QTextCursor.SelectionType.WordUnderCursor)
    return (spot[0], cursor.selectionStart()), (spot[0], cursor.selectionEnd())


_MOVES = {
    Qt.Key.Key_Left: QTextCursor.MoveOperation.PreviousCharacter,
    Qt.Key.Key_Right: QTextCursor.MoveOperation.NextCharacter,
    Qt.Key.Key_Up: QTextCursor.MoveOperation.Up,
    Qt.Key.Key_Down: QTextCursor.MoveOperation.Down,
    Qt.Key.Key_Home: QTextCursor.MoveOperation.StartOfLine,
    Qt.Key.Key_End: QTextCursor.MoveOperation.EndOfLine,
}
_WORD_MOVES = {
    Qt.Key.Key_Left: QTextCursor.MoveOperation.PreviousWord,
    Qt.Key.Key_Right: QTextCursor.MoveOperation.NextWord,
    Qt.Key.Key_Home: QTextCursor.MoveOperation.Start,
    Qt.Key.Key_End: QTextCursor.MoveOperation.End,
}


def moved(docs: Docs, spot: Spot, key: int, by_word: bool) -> Spot | None:
    """Where Shift+arrow (Ctrl: by word) takes a selection end; None for other keys."""
    op = (_WORD_MOVES if by_word else _MOVES).get(Qt.Key(key))
    if op is None or not docs:
        return None
    index, pos = spot
    doc = docs[index][0]
    cursor = QTextCursor(doc)
    cursor.setPosition(min(pos, last_position(doc)))
    before = cursor.position()
    cursor.movePosition(op)
    if by_word and key == Qt.Key.Key_End:
        return (len(docs) - 1, last_position(docs[-1][0]))
    if by_word and key == Qt.Key.Key_Home:
        return (0, 0)
    if cursor.position() == before:
        # At a document's edge: step into the next or previous block group of the reply.
        forward = key in (Qt.Key.Key_Right, Qt.Key.Key_Down, Qt.Key.Key_End)
        if forward and index + 1 < len(docs):
            return (index + 1, 0)
        if not forward and index > 0:
            return (index - 1, last_position(docs[index - 1][0]))
    return (index, cursor.position())


# A selection end past any message's text: from here on, to its end.
END: Spot = (1 << 30, 1 << 30)


def everything(docs: Docs) -> tuple[Spot, Spot]:
    """Start and end of a message's whole text (Ctrl+A)."""
    if not docs:
        return (0, 0), (0, 0)
    return (0, 0), (len(docs) - 1, last_position(docs[-1][0]))
