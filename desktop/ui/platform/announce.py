"""Spoken announcements for screen readers (Qt's accessibility announcement event)."""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QAccessible, QAccessibleAnnouncementEvent

# Long replies are announced by their start; the whole text is in the message list.
ANNOUNCE_CHARS = 300


def announce(source: QObject, text: str) -> None:
    """Have screen readers say `text` politely (after what they are saying now)."""
    if len(text) > ANNOUNCE_CHARS:
        text = text[:ANNOUNCE_CHARS].rsplit(" ", 1)[0] + "…"
    event = QAccessibleAnnouncementEvent(source, text)
    event.setPoliteness(QAccessible.AnnouncementPoliteness.Polite)
    QAccessible.updateAccessibility(event)
