"""< n/m > under a reply with earlier versions (Regenerate): which one is shown, and the
shown message for each."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter

from desktop.core.models import ChatMessage
from desktop.ui.render.bubble_layout import BubbleLayout
from desktop.ui.theme import Colors


def version_count(msg: ChatMessage) -> tuple[int, int]:
    """(n, m): the version shown, counted from 1, and how many there are."""
    total = len(msg.versions) + 1
    shown = msg.shown_version if 0 <= msg.shown_version < len(msg.versions) else total - 1
    return shown + 1, total


def version_name(msg: ChatMessage) -> str:
    """The switch's accessible name: "Version n of m"."""
    n, m = version_count(msg)
    return f"Version {n} of {m}"


def showing(newest: ChatMessage, n: int) -> ChatMessage:
    """`newest` (the reply itself) as shown with its version `n` (from 1; the last is
    `newest` itself)."""
    if n >= len(newest.versions) + 1:
        return newest
    v = newest.versions[n - 1]
    return replace(
        newest,
        text=v.text,
        status=v.status,
        cause=v.cause,
        thinking="",
        tools=[],
        usage={"model": v.model} if v.model else {},
        shown_version=n - 1,
    )


def draw_version_switch(
    painter: QPainter, msg: ChatMessage, lay: BubbleLayout, colors: Colors
) -> None:
    zones = [z for z in lay.zones if z.kind == "version"]
    if len(zones) != 2:
        return
    n, m = version_count(msg)
    back, ahead = zones
    painter.setPen(QColor(colors.muted if n > 1 else colors.card_border))
    painter.drawText(back.rect, Qt.AlignmentFlag.AlignCenter, "\u2039")
    painter.setPen(QColor(colors.muted if n < m else colors.card_border))
    painter.drawText(ahead.rect, Qt.AlignmentFlag.AlignCenter, "\u203a")
    painter.setPen(QColor(colors.muted))
    r = back.rect
    middle = QRectF(r.right(), r.top(), ahead.rect.left() - r.right(), r.height())
    painter.drawText(middle, Qt.AlignmentFlag.AlignCenter, f"{n}/{m}")
