"""Ctrl+R: a small popup over the prompts of every chat, filtered as you type.

Enter (or a click) puts the highlighted prompt in the message box; Esc closes the popup and
leaves the box as it was. Up/Down move in the list while the filter keeps the focus.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFrame, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout, QWidget


class PromptSearch(QFrame):
    """The popup; `prompts()` gives (chat key, text), newest first.

    Signals:
        chosen(str): the prompt to put in the message box.
    """

    chosen = Signal(str)

    def __init__(self, parent: QWidget, prompts: Callable[[], list[tuple[str, str]]]) -> None:
        super().__init__(parent, Qt.WindowType.Popup)
        self.setObjectName("promptSearch")
        self.setAccessibleName("Search earlier prompts")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self._prompts = prompts
        self._all: list[str] = []
        self._anchor: QWidget | None = None
        self.filter = QLineEdit(self)
        self.filter.setPlaceholderText("Search your earlier prompts")
        self.filter.setAccessibleName("Prompt search")
        self.filter.setAccessibleDescription("Type to filter; Enter puts it in the message box")
        self.list = QListWidget(self)
        self.list.setAccessibleName("Earlier prompts")
        self.list.setUniformItemSizes(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.setSpacing(6)
        layout.addWidget(self.filter)
        layout.addWidget(self.list)
        self.filter.textChanged.connect(self._refilter)
        self.filter.installEventFilter(self)
        self.list.itemActivated.connect(self._take)
        self.list.itemClicked.connect(self._take)

    def popup(self, anchor: QWidget) -> None:
        """Open over `anchor` (the message box), listing every prompt, newest first."""
        self._all = list(dict.fromkeys(text for _, text in self._prompts() if text.strip()))
        self.filter.clear()
        self._anchor = anchor
        self._refilter("")
        self.show()
        self.filter.setFocus(Qt.FocusReason.PopupFocusReason)

    def shown(self) -> list[str]:
        """The prompts listed now, top to bottom."""
        return [
            str(self.list.item(i).data(Qt.ItemDataRole.UserRole)) for i in range(self.list.count())
        ]

    def _refilter(self, text: str) -> None:
        words = text.casefold().split()
        self.list.clear()
        for prompt in self._all:
            folded = prompt.casefold()
            if all(w in folded for w in words):
                item = QListWidgetItem(" ".join(prompt.split()), self.list)
                item.setData(Qt.ItemDataRole.UserRole, prompt)
                item.setToolTip(prompt[:500])
        if self.list.count():
            self.list.setCurrentRow(0)
        self._fit()

    def _fit(self) -> None:
        """As tall as its rows (8 at most), just above the message box."""
        anchor = self._anchor
        if anchor is None:
            return
        row = max(self.list.sizeHintForRow(0), self.list.fontMetrics().height() + 6)
        rows = min(8, max(1, self.list.count()))
        self.list.setFixedHeight(rows * row + 2 * self.list.frameWidth() + 4)
        self.adjustSize()
        self.resize(max(420, anchor.width()), self.sizeHint().height())
        at = anchor.mapToGlobal(anchor.rect().topLeft())
        self.move(at.x(), at.y() - self.height() - 4)

    def _take(self, item: QListWidgetItem) -> None:
        self.hide()
        self.chosen.emit(str(item.data(Qt.ItemDataRole.UserRole)))

    def eventFilter(self, watched: QObject, e: QEvent) -> bool:
        if watched is self.filter and e.type() == QEvent.Type.KeyPress:
            assert isinstance(e, QKeyEvent)
            key = e.key()
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                item = self.list.currentItem()
                if item is not None:
                    self._take(item)
                return True
            if key in (Qt.Key.Key_Up, Qt.Key.Key_Down, Qt.Key.Key_PageUp, Qt.Key.Key_PageDown):
                self.list.keyPressEvent(e)  # move in the list, typing stays in the filter
                return True
            if key == Qt.Key.Key_Escape:
                self.hide()
                return True
        return super().eventFilter(watched, e)
