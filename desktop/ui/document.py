"""A QTextDocument that never loads external resources, and helpers to find its code blocks."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QRectF, QUrl
from PySide6.QtGui import QTextDocument, QTextFrame, QTextTable

from desktop.ui.markdown import CODE_CELL_PADDING


class SafeDocument(QTextDocument):
    """Rich text for one message; refuses every resource, so remote images are never fetched."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.refused: list[str] = []
        # Set when the text is narrower than the document was laid out to (see used_width).
        self.text_width: float | None = None
        # Its code blocks' rects once laid out for good (a finished block is reused per frame).
        self.code_rects: list[QRectF] | None = None

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
