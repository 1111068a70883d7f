"""Paints how a reply that did not complete ended (stopped, interrupted, failed) and its Retry,
and that a reply still streaming waits for its link."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath

from desktop.core.chats import reply_state as rs
from desktop.core.models import ChatMessage
from desktop.ui.render.bubble_layout import BubbleLayout
from desktop.ui.theme import Colors


def note_color(msg: ChatMessage, colors: Colors) -> QColor:
    """Failed reads as an error, interrupted as a warning, stopped (the user's doing) muted."""
    if msg.streaming:  # waiting for its link (the header says how it goes)
        return QColor(colors.muted)
    if msg.status == rs.FAILED:
        return QColor(colors.danger)
    if msg.status == rs.INTERRUPTED:
        return QColor(colors.warning)
    return QColor(colors.muted)


def draw_reply_note(painter: QPainter, msg: ChatMessage, lay: BubbleLayout, colors: Colors) -> None:
    """The state line (wrapped) and the Retry button laid out by `build_layout`."""
    rect = lay.error_rect
    if rect is None:
        return
    painter.setPen(note_color(msg, colors))
    flags = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop) | int(
        Qt.TextFlag.TextWordWrap
    )
    painter.drawText(rect, flags, lay.waiting or rs.state_text(msg))
    for zone in lay.zones:
        if zone.kind != "retry_reply":
            continue
        path = QPainterPath()
        path.addRoundedRect(zone.rect, 8, 8)
        painter.fillPath(path, QColor(colors.accent))
        painter.setPen(QColor("#ffffff"))
        painter.drawText(zone.rect, Qt.AlignmentFlag.AlignCenter, zone.label)
