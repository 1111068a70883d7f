"""The round "jump to newest" button floating over the chat view while the user reads far up."""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QToolButton, QWidget

from desktop.ui.platform.resources import icon
from desktop.ui.theme import Colors

SIZE = 40  # the button's diameter
MARGIN = 16  # from the view's bottom-right corner (left of its scroll bar)
LABEL = "Jump to newest"
SHORTCUT = "Ctrl+End"


class JumpButton(QToolButton):
    """Shown by the chat view when the newest message is more than a screen away.

    `replies` counts the replies that arrived meanwhile; with any, a badge in the accent
    colour names how many, and the accessible name says it too.
    """

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("jumpButton")
        self.setFixedSize(SIZE, SIZE)
        self.setIconSize(QSize(20, 20))
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # Ctrl+End reaches it from the keyboard
        self.setToolTip(f"{LABEL} ({SHORTCUT})")
        self.setIcon(icon("jump-newest"))
        self.replies = 0
        self._accent = QColor("#2f7cf6")
        self._badge_text = QColor("#ffffff")
        self._ring = QColor("#ffffff")  # the view's background: sets the badge off a bubble
        self._name()
        self.hide()

    def set_colors(self, colors: Colors) -> None:
        self.setIcon(icon("jump-newest", colors.icon_tint))
        self._accent = QColor(colors.accent)
        self._ring = QColor(colors.window)
        self.update()

    def set_replies(self, count: int) -> None:
        if count != self.replies:
            self.replies = count
            self._name()
            self.update()

    def _name(self) -> None:
        n = self.replies
        said = f", {n} new {'reply' if n == 1 else 'replies'}" if n else ""
        self.setAccessibleName(f"{LABEL}{said}")
        self.setAccessibleDescription(f"Shows the newest messages ({SHORTCUT})")

    def paintEvent(self, e: QPaintEvent) -> None:
        super().paintEvent(e)
        if not self.replies:
            return
        # The badge sits on the ring's top-right, over the round button's edge.
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        text = str(self.replies) if self.replies < 100 else "99+"
        font = QFont(self.font())
        font.setPixelSize(10)
        font.setBold(True)
        p.setFont(font)
        w = max(16, p.fontMetrics().horizontalAdvance(text) + 8)
        badge = QRectF(self.width() - w - 1, 1, w, 16)
        p.setPen(QPen(self._ring, 2))
        p.setBrush(self._accent)
        p.drawRoundedRect(badge, 8, 8)
        p.setPen(self._badge_text)
        p.drawText(badge, Qt.AlignmentFlag.AlignCenter, text)
        p.end()
