"""Geometry of a reply's "N files changed" card: its header, a row per file, each file's diff
when expanded, and the Restore button (no painting; see ui/chat/changes_card)."""

from __future__ import annotations

import html
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QFont, QFontMetricsF, QTextDocument

from desktop.core.chats.file_changes import FileChange, changes_of, summary
from desktop.core.models import ChatMessage
from desktop.ui.render.document import SafeDocument
from desktop.ui.theme import Colors

CARD_H = 30.0
ROW_H = 26.0
BUTTON_H = 26.0
DIFF_LIMIT = 12000
RESTORE_LABEL = "Review and restore…"


@dataclass(slots=True)
class FileRow:
    rect: QRectF
    change: FileChange
    diff: QTextDocument | None = None
    diff_pos: QPointF | None = None


@dataclass(slots=True)
class ChangesCard:
    """Where the card and its parts are, relative to the bubble's content box until the
    layout shifts it (`shifted`)."""

    card: QRectF
    header: QRectF
    title: str
    rows: list[FileRow]
    expanded: bool
    button: QRectF | None = None  # Review and restore…, on an expanded card

    def shifted(self, dx: float, width: float) -> ChangesCard:
        def wide(r: QRectF) -> QRectF:
            return QRectF(r.left() + dx, r.top(), width - r.left(), r.height())

        rows = [
            FileRow(
                wide(row.rect),
                row.change,
                row.diff,
                None if row.diff_pos is None else row.diff_pos + QPointF(dx, 0),
            )
            for row in self.rows
        ]
        button = None if self.button is None else self.button.translated(dx, 0)
        return ChangesCard(
            wide(self.card), wide(self.header), self.title, rows, self.expanded, button
        )


def diff_doc(diff: str, font: QFont, width: float, colors: Colors) -> QTextDocument:
    """A diff as a monospace document, added lines green, removed red, hunk heads muted."""
    f = QFont(font)
    f.setFamilies(["monospace"])
    f.setStyleHint(QFont.StyleHint.Monospace)
    f.setPointSizeF(max(7.0, font.pointSizeF() - 1))
    lines = []
    for line in (diff or "(the gateway sent no diff for this file)")[:DIFF_LIMIT].splitlines():
        color = colors.text
        if line.startswith("+"):
            color = colors.success
        elif line.startswith("-"):
            color = colors.danger
        elif line.startswith("@@") or line.startswith("\\"):
            color = colors.muted
        text = html.escape(line) or "&nbsp;"
        lines.append(f'<span style="color:{color}; white-space:pre">{text}</span>')
    doc = SafeDocument()
    doc.setDocumentMargin(0)
    doc.setDefaultFont(f)
    doc.setHtml("<br>".join(lines))
    doc.setTextWidth(width)
    return doc


def lay_out_changes(
    msg: ChatMessage,
    y: float,
    width: float,
    font: QFont,
    colors: Colors,
    *,
    expanded: frozenset[tuple[str, int]],
) -> ChangesCard | None:
    """The card of a reply whose tools changed files, from `y` down; None when none did.
    Expanded (`("changes", 0)`) it lists the files; a file (`("change_file", i)`) shows its
    diff; the Restore button closes an expanded card."""
    changes = changes_of(msg)
    if not changes:
        return None
    fm = QFontMetricsF(font)
    header = QRectF(0, y, width, CARD_H)
    title = summary(changes)
    rows: list[FileRow] = []
    button: QRectF | None = None
    bottom = header.bottom()
    open_ = ("changes", 0) in expanded
    if open_:
        for i, change in enumerate(changes):
            row = FileRow(QRectF(0, bottom, width, ROW_H), change)
            bottom += ROW_H
            if ("change_file", i) in expanded:
                row.diff = diff_doc(change.diff, font, width - 24, colors)
                row.diff_pos = QPointF(12, bottom + 2)
                bottom += row.diff.size().height() + 8
            rows.append(row)
        bottom += 4
        w = fm.horizontalAdvance(RESTORE_LABEL) + 22
        button = QRectF(10, bottom, w, BUTTON_H)
        bottom += BUTTON_H + 8
    card = QRectF(0, y, width, bottom - y)
    return ChangesCard(card, header, title, rows, open_, button)
