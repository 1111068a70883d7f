"""Theme, resources, session rows and tray behaviour."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from desktop.ui.platform.resources import icon
from desktop.ui.platform.tray import Tray
from desktop.ui.sessions.session_list import relative_time
from desktop.ui.theme import DARK, LIGHT, ThemeManager, ThemeMode

ICONS = [
    "send",
    "stop",
    "attach",
    "settings",
    "copy",
    "retry",
    "edit",
    "discard",
    "app",
    "tray",
    "status-online",
    "status-reconnecting",
    "status-offline",
    "status-paused",
    "status-failed",
]


def test_every_icon_loads_and_renders_at_high_dpi(qapp: Any) -> None:
    """Each icon draws something visible at 64 px (a missing or empty SVG paints nothing)."""
    for name in ICONS:
        pm = icon(name).pixmap(64, 64)
        assert not pm.isNull(), name
        image = pm.toImage()
        inked = sum(
            image.pixelColor(x, y).alpha() > 0
            for x in range(0, image.width(), 2)
            for y in range(0, image.height(), 2)
        )
        # At least 2 % of the sampled pixels carry ink, at most all of them.
        assert inked >= image.width() * image.height() // 4 // 50, (name, inked)


# Line icons drawn in the neutral grey, recoloured on a theme with an icon tint.
LINE_ICONS = ["attach", "copy", "settings", "edit", "retry", "discard", "search", "close"]


def _ink(image: Any) -> list[Any]:
    """The colours of a picture's clearly drawn pixels (its strokes, not their soft edges)."""
    return [
        image.pixelColor(x, y)
        for x in range(image.width())
        for y in range(image.height())
        if image.pixelColor(x, y).alpha() > 200
    ]


def _luminance(color: QColor) -> float:
    return 0.2126 * color.redF() + 0.7152 * color.greenF() + 0.0722 * color.blueF()


def test_line_icons_show_on_the_dark_theme_in_its_tint(qapp: Any) -> None:
    """On the dark window the line icons are drawn in the theme's light tint, standing out
    from it; as drawn (neutral grey) they would sit close to the dark background."""
    tint, window = QColor(DARK.icon_tint), QColor(DARK.window)
    for name in LINE_ICONS:
        ink = _ink(icon(name, DARK.icon_tint).pixmap(64, 64).toImage())
        assert ink, name
        in_tint = [
            c for c in ink if max(abs(c.red() - tint.red()), abs(c.blue() - tint.blue())) < 24
        ]
        assert len(in_tint) >= 0.9 * len(ink), (name, ink[0].name(), DARK.icon_tint)
        mean = sum(_luminance(c) for c in ink) / len(ink)
        assert mean - _luminance(window) > 0.45, (name, mean)


def test_theme_modes_set_palette_and_follow_system(qapp: QApplication) -> None:
    old_sheet, old_palette = qapp.styleSheet(), qapp.palette()
    try:
        tm = ThemeManager(qapp, ThemeMode.DARK)
        assert tm.colors is DARK
        assert qapp.palette().window().color().name() == DARK.window
        tm.set_mode(ThemeMode.LIGHT)
        assert tm.colors is LIGHT
        assert "chatView" in qapp.styleSheet()
        tm.set_mode(ThemeMode.SYSTEM)
        assert tm.colors in (LIGHT, DARK)
        tm.deleteLater()
    finally:
        qapp.setStyleSheet(old_sheet)
        qapp.setPalette(old_palette)


def test_the_theme_worn_already_is_not_applied_again(qapp: QApplication, qtbot: Any) -> None:
    """The preferences applied at start name the theme the window already wears: its widgets
    are not styled anew (~25 ms before the window showed), yet listeners get its colours."""
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QPushButton

    old_sheet, old_palette = qapp.styleSheet(), qapp.palette()
    restyled: list[QEvent.Type] = []

    class Restyles(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() in (QEvent.Type.StyleChange, QEvent.Type.PaletteChange):
                restyled.append(event.type())
            return False

    try:
        tm = ThemeManager(qapp, ThemeMode.LIGHT)
        button = QPushButton("Send")
        qtbot.addWidget(button)
        button.show()
        probe = Restyles(button)
        button.installEventFilter(probe)
        heard: list[object] = []
        tm.theme_changed.connect(heard.append)
        tm.set_mode(ThemeMode.LIGHT)
        assert heard == [LIGHT]
        assert restyled == [], "styled anew for the same theme"
        tm.set_mode(ThemeMode.DARK)
        assert heard == [LIGHT, DARK] and restyled, "another theme is applied"
        assert qapp.palette().window().color().name() == DARK.window
        tm.deleteLater()
    finally:
        qapp.setStyleSheet(old_sheet)
        qapp.setPalette(old_palette)


def test_relative_times() -> None:
    now = 1_700_000_000.0
    assert relative_time(now - 10, now) == "now"
    assert relative_time(now - 600, now) == "10m"
    assert relative_time(now - 7200, now) == "2h"
    assert relative_time(0, now) == ""


def test_tray_absent_is_safe_and_only_notifies_when_unseen(qtbot: Any) -> None:
    tray = Tray()
    assert not tray.can_hide_to_tray
    tray.set_unread(4)
    assert tray.reply_finished("Chat", "done", seen=True) is False
    assert tray.reply_finished("Chat", "done\n  now", seen=False) is True
    tray.set_notifications(False)
    assert tray.reply_finished("Chat", "again") is False
    assert tray.notified == [("Chat", "done now")]


def test_times_and_dates_follow_the_locale() -> None:
    from PySide6.QtCore import QDateTime, QLocale

    from desktop.core.models import ChatMessage, Role
    from desktop.ui.render.usage import footer_text

    at = QDateTime.fromString("2026-03-12T17:56:00", "yyyy-MM-ddTHH:mm:ss")
    when = at.toMSecsSinceEpoch() / 1000
    now = when + 30 * 86400
    before = QLocale()
    try:
        QLocale.setDefault(QLocale(QLocale.Language.English, QLocale.Country.UnitedStates))
        assert "5:56" in footer_text(ChatMessage("m", Role.USER, "hi", created_at=when))
        assert "PM" in footer_text(ChatMessage("m", Role.USER, "hi", created_at=when))
        assert relative_time(when, now) == "12 Mar"
        QLocale.setDefault(QLocale(QLocale.Language.German, QLocale.Country.Germany))
        assert footer_text(ChatMessage("m", Role.USER, "hi", created_at=when)) == "17:56"
        assert relative_time(when, now) == "12 März"
        assert relative_time(now - 2 * 86400, now) == QLocale().dayName(
            QDateTime.fromMSecsSinceEpoch(int((now - 2 * 86400) * 1000)).date().dayOfWeek(),
            QLocale.FormatType.ShortFormat,
        )
    finally:
        QLocale.setDefault(before)
