"""Light and dark palettes, the small QSS per theme, and following the system colour scheme."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from desktop.ui.platform.resources import read_resource_text


class ThemeMode(Enum):
    LIGHT = "light"
    DARK = "dark"
    SYSTEM = "system"


@dataclass(frozen=True, slots=True)
class Colors:
    """The colours custom-painted widgets use (bubbles, cards, badges)."""

    dark: bool
    window: str
    base: str
    text: str
    muted: str
    accent: str
    user_bubble: str
    user_text: str
    assistant_bubble: str
    assistant_text: str
    card: str
    card_border: str
    code_bg: str
    link: str
    user_link: str
    danger: str
    warning: str
    success: str
    selection: str
    pygments_style: str
    icon_tint: str = ""  # recolours the neutral line icons; empty keeps them as drawn


LIGHT = Colors(
    dark=False,
    window="#f4f5f7",
    base="#ffffff",
    text="#1c2330",
    muted="#6b7483",
    accent="#2f7cf6",
    user_bubble="#2f7cf6",
    user_text="#ffffff",
    assistant_bubble="#ffffff",
    assistant_text="#1c2330",
    card="#f3f5f8",
    card_border="#dfe3ea",
    code_bg="#f3f5f8",
    link="#1f66d6",
    user_link="#e4eeff",
    danger="#e5484d",
    warning="#c27a0e",
    success="#2f9e6b",
    selection="#e3edfd",
    pygments_style="friendly",
)

DARK = Colors(
    dark=True,
    window="#15181e",
    base="#1c2028",
    text="#e6e9ef",
    muted="#9099a8",
    accent="#4b8ff8",
    user_bubble="#3a73d8",
    user_text="#ffffff",
    assistant_bubble="#242a34",
    assistant_text="#e6e9ef",
    card="#1e232c",
    card_border="#323a47",
    code_bg="#181c23",
    link="#7fb0ff",
    user_link="#e4eeff",
    danger="#f0676b",
    warning="#e3a33c",
    success="#4cc38a",
    selection="#2a3546",
    pygments_style="monokai",
    icon_tint="#aab3c2",
)


def colors_for(dark: bool) -> Colors:
    """The colour set of a light or dark theme."""
    return DARK if dark else LIGHT


def system_is_dark() -> bool:
    """True when the OS colour scheme is dark."""
    hints = QGuiApplication.styleHints()
    return bool(hints.colorScheme() == Qt.ColorScheme.Dark)


def palette_for(c: Colors) -> QPalette:
    """A QPalette built from a colour set."""
    p = QPalette()
    roles = {
        QPalette.ColorRole.Window: c.window,
        QPalette.ColorRole.WindowText: c.text,
        QPalette.ColorRole.Base: c.base,
        QPalette.ColorRole.AlternateBase: c.card,
        QPalette.ColorRole.Text: c.text,
        QPalette.ColorRole.Button: c.base,
        QPalette.ColorRole.ButtonText: c.text,
        QPalette.ColorRole.Highlight: c.accent,
        QPalette.ColorRole.HighlightedText: "#ffffff",
        QPalette.ColorRole.ToolTipBase: c.base,
        QPalette.ColorRole.ToolTipText: c.text,
        QPalette.ColorRole.PlaceholderText: c.muted,
        QPalette.ColorRole.Link: c.link,
        QPalette.ColorRole.Mid: c.card_border,
    }
    for role, value in roles.items():
        p.setColor(role, QColor(value))
    # Greyed items (a menu entry the gateway cannot do, a disabled button) read as greyed.
    for role in (
        QPalette.ColorRole.WindowText,
        QPalette.ColorRole.Text,
        QPalette.ColorRole.ButtonText,
    ):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor(c.muted))
    return p


class ThemeManager(QObject):
    """Applies a theme to the application and follows the OS scheme in SYSTEM mode.

    Signals:
        theme_changed(object): the Colors now in effect.
    """

    theme_changed = Signal(object)

    def __init__(self, app: QApplication, mode: ThemeMode = ThemeMode.SYSTEM) -> None:
        super().__init__(app)
        self._app = app
        self._mode = mode
        self.colors = LIGHT
        self._dark: bool | None = None  # the theme the application wears (None: not set yet)
        QGuiApplication.styleHints().colorSchemeChanged.connect(self._on_hints_scheme_changed)
        self.apply()

    @property
    def mode(self) -> ThemeMode:
        return self._mode

    def set_mode(self, mode: ThemeMode) -> None:
        """Switch between light, dark and following the system."""
        self._mode = mode
        self.apply()

    def apply(self) -> None:
        """Set palette and style sheet for the current mode; listeners hear the colours."""
        dark = system_is_dark() if self._mode is ThemeMode.SYSTEM else self._mode is ThemeMode.DARK
        self.colors = colors_for(dark)
        if dark is not self._dark:
            # Not again for the theme already worn: every widget would be styled anew (the
            # preferences applied at start cost ~25 ms before the window showed).
            self._dark = dark
            self._app.setPalette(palette_for(self.colors))
            name = "dark" if dark else "light"
            qss = read_resource_text("themes", "base.qss")
            qss += read_resource_text("themes", f"{name}.qss")
            self._app.setStyleSheet(qss)
        self.theme_changed.emit(self.colors)

    def _on_hints_scheme_changed(self, _scheme: Qt.ColorScheme) -> None:
        if self._mode is ThemeMode.SYSTEM:
            self.apply()
