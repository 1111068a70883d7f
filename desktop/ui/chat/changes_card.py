"""Paints a reply's "N files changed" card: the header, a row per file with its +/- counts,
each file's diff when expanded, and the Review and restore… button."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPainterPath

from desktop.ui.platform.resources import icon
from desktop.ui.render.changes import RESTORE_LABEL, ChangesCard
from desktop.ui.theme import Colors


def draw_changes(painter: QPainter, card: ChangesCard, colors: Colors) -> None:
    path = QPainterPath()
    path.addRoundedRect(card.card, 9, 9)
    painter.fillPath(path, QColor(colors.card))
    painter.setPen(QColor(colors.card_border))
    painter.drawPath(path)
    head = card.header
    icon("chevron-down" if card.expanded else "chevron-right", colors.icon_tint).paint(
        painter, QRectF(head.left() + 8, head.top() + 7, 16, 16).toRect()
    )
    painter.setPen(QColor(colors.text))
    painter.drawText(head.adjusted(30, 0, -10, 0), Qt.AlignmentFlag.AlignVCenter, card.title)
    added = sum(r.change.added for r in card.rows)
    removed = sum(r.change.removed for r in card.rows)
    if card.expanded and (added or removed):
        _counts(painter, head.adjusted(0, 0, -10, 0), added, removed, colors)
    fm = QFontMetricsF(painter.font())
    for row in card.rows:
        r = row.rect
        painter.setPen(QColor(colors.card_border))
        painter.drawLine(QPointF(r.left() + 8, r.top()), QPointF(r.right() - 8, r.top()))
        painter.setPen(QColor(colors.muted))
        painter.drawText(
            QRectF(r.left() + 12, r.top(), 14, r.height()),
            Qt.AlignmentFlag.AlignVCenter,
            "▾" if row.diff is not None else "▸",
        )
        counts_w = 90.0
        name = fm.elidedText(row.change.path, Qt.TextElideMode.ElideLeft, r.width() - 40 - counts_w)
        painter.setPen(QColor(colors.text))
        painter.drawText(r.adjusted(30, 0, -counts_w, 0), Qt.AlignmentFlag.AlignVCenter, name)
        _counts(painter, r.adjusted(0, 0, -10, 0), row.change.added, row.change.removed, colors)
        if row.diff is not None and row.diff_pos is not None:
            painter.save()
            painter.translate(row.diff_pos)
            row.diff.drawContents(painter)
            painter.restore()
    if card.button is not None:
        p = QPainterPath()
        p.addRoundedRect(card.button, 8, 8)
        painter.setPen(QColor(colors.accent))
        painter.drawPath(p)
        painter.drawText(card.button, Qt.AlignmentFlag.AlignCenter, RESTORE_LABEL)


def _counts(painter: QPainter, rect: QRectF, added: int, removed: int, colors: Colors) -> None:
    fm = QFontMetricsF(painter.font())
    minus = f"\u2212{removed}"
    right = Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight
    painter.setPen(QColor(colors.danger))
    painter.drawText(rect, right, minus)
    painter.setPen(QColor(colors.success))
    painter.drawText(rect.adjusted(0, 0, -(fm.horizontalAdvance(minus) + 8), 0), right, f"+{added}")
