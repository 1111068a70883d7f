"""Labels for text from outside the app (errors, titles, file names): a long word without a
space (a pasted key, a URL, a hash) wraps or is elided instead of widening the window."""

from __future__ import annotations

import re

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFontMetrics, QPainter, QPaintEvent, QResizeEvent
from PySide6.QtWidgets import (
    QLabel,
    QSizePolicy,
    QStyle,
    QStyleOptionToolButton,
    QStylePainter,
    QToolButton,
    QWidget,
)

# Where a long run may break: U+200B ZERO WIDTH SPACE is a line-break opportunity to Qt's
# text layout and draws nothing.
BREAK = "\u200b"
CHUNK = 24
_LONG_RUN = re.compile(rf"\S{{{CHUNK + 1},}}")


def breakable(text: str) -> str:
    """`text` with a break opportunity every CHUNK characters inside runs without a space."""
    return _LONG_RUN.sub(
        lambda m: BREAK.join(m.group(0)[i : i + CHUNK] for i in range(0, len(m.group(0)), CHUNK)),
        text,
    )


class WrappingLabel(QLabel):
    """A word-wrapped label that also breaks inside long words; `text()` is what was set."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self._full = ""
        self.setText(text)

    def setText(self, text: str) -> None:
        self._full = text
        super().setText(breakable(text))

    def text(self) -> str:
        return self._full


def few_chars(metrics: QFontMetrics, few: int = 4) -> int:
    """The width an eliding widget asks for at least: a few characters' (widths of "M")."""
    return metrics.horizontalAdvance("M") * few


class ElidingLabel(QLabel):
    """A one-line label that ends in "…" where its text does not fit (the whole text in its
    tooltip then), and never asks the layout for more than a few characters' width."""

    def __init__(self, text: str = "", parent: QWidget | None = None, *, few: int = 4) -> None:
        self._tip = ""
        self._few = few  # the fewest characters (widths of "M") it asks the layout for
        super().__init__(text, parent)

    def set_tip(self, tip: str) -> None:
        """A tooltip of its own, shown whether or not the text is cut ("": the cut text)."""
        self._tip = tip
        self._update_tip()

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        return QSize(min(hint.width(), few_chars(self.fontMetrics(), self._few)), hint.height())

    def setText(self, text: str) -> None:
        super().setText(text)
        self._update_tip()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._update_tip()

    def _elided(self) -> str:
        width = self.contentsRect().width()
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, width)

    def _update_tip(self) -> None:
        if self._tip:
            self.setToolTip(self._tip)
            return
        self.setToolTip(self.text() if self._elided() != self.text() else "")

    def paintEvent(self, event: QPaintEvent) -> None:
        shown = self._elided()
        if shown != self.text() and len(shown.rstrip("…")) < 3:
            return  # "l…" says nothing: a label squeezed that far shows nothing (its tooltip)
        painter = QPainter(self)
        self.style().drawItemText(
            painter,
            self.contentsRect(),
            int(self.alignment()),
            self.palette(),
            self.isEnabled(),
            shown,
            self.foregroundRole(),
        )
        painter.end()


class ElidingToolButton(QToolButton):
    """A text tool button (a model's name) that asks for its whole text but can be squeezed to
    a few characters, its text then ending in "…" (the whole of it belongs in its tooltip)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # QToolButton's default policy is Fixed: it would hold its whole text's width.
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def minimumSizeHint(self) -> QSize:
        hint = self.sizeHint()
        metrics = self.fontMetrics()
        spare = max(0, metrics.horizontalAdvance(self.text()) - few_chars(metrics))
        return QSize(hint.width() - spare, hint.height())

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QStylePainter(self)
        option = QStyleOptionToolButton()
        self.initStyleOption(option)
        short = self.width() - self.sizeHint().width()
        if short < 0:
            metrics = self.fontMetrics()
            room = max(0, metrics.horizontalAdvance(self.text()) + short)
            option.text = metrics.elidedText(self.text(), Qt.TextElideMode.ElideRight, room)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ToolButton, option)
