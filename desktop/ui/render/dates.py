"""Times and dates as the user's locale writes them (12 or 24 hour clock, month names)."""

from __future__ import annotations

from PySide6.QtCore import QDateTime, QLocale


def _at(when: float) -> QDateTime:
    return QDateTime.fromMSecsSinceEpoch(int(when * 1000))


def clock_time(when: float) -> str:
    """'17:56' or '5:56 PM', by the locale."""
    return QLocale().toString(_at(when).time(), QLocale.FormatType.ShortFormat)


def weekday(when: float) -> str:
    """'Mon', in the locale's language."""
    return QLocale().dayName(_at(when).date().dayOfWeek(), QLocale.FormatType.ShortFormat)


def day_and_month(when: float) -> str:
    """'12 Mar' (or the locale's own month name)."""
    date = _at(when).date()
    return f"{date.day()} {QLocale().monthName(date.month(), QLocale.FormatType.ShortFormat)}"
