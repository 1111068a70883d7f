"""A passing message ("Copied", "Exported to …") floating over the chat's bottom edge.

It floats rather than taking a status bar's row, so showing it never moves the layout.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QAccessible, QAccessibleEvent
from PySide6.QtWidgets import QLabel, QWidget

MARGIN = 14  # above the bottom of the widget it floats over


class Toast(QLabel):
    """Shown over `anchor` (bottom centre) for a while, then hidden; `timer` hides it."""

    def __init__(self, parent: QWidget, anchor: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("toast")
        self.setAccessibleName("Status")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._anchor = anchor
        anchor.installEventFilter(self)
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self.hide)
        self.hide()

    def show_message(self, text: str, ms: int) -> None:
        self.setText(text)
        self.adjustSize()
        self._place()
        self.show()
        self.raise_()
        self.timer.start(ms)
        QAccessible.updateAccessibility(QAccessibleEvent(self, QAccessible.Event.NameChanged))

    def message(self) -> str:
        """The message showing now ("" when none)."""
        return self.text() if self.isVisible() else ""

    def _place(self) -> None:
        geo = self._anchor.geometry()
        width = min(self.sizeHint().width(), max(80, geo.width() - 2 * MARGIN))
        self.resize(width, self.sizeHint().height())
        x = geo.x() + (geo.width() - width) // 2
        self.move(x, geo.y() + geo.height() - self.height() - MARGIN)

    def eventFilter(self, watched: QObject, e: QEvent) -> bool:
        if watched is self._anchor and e.type() in (QEvent.Type.Resize, QEvent.Type.Move):
            self._place()
        return super().eventFilter(watched, e)
