"""Find in the open chat: a slim bar above the conversation with a count and next/previous."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget


class FindEdit(QLineEdit):
    """The query box: Enter finds the next match, Shift+Enter the previous, Esc closes.

    Signals:
        step(int): +1 for the next match, -1 for the previous.
        escape(): Esc was pressed.
    """

    step = Signal(int)
    escape = Signal()

    def event(self, e: QEvent) -> bool:
        # Esc closes the bar rather than reaching the window's "stop the reply" shortcut.
        if (
            e.type() == QEvent.Type.ShortcutOverride
            and isinstance(e, QKeyEvent)
            and e.key() == Qt.Key.Key_Escape
        ):
            e.accept()
            return True
        return super().event(e)

    def keyPressEvent(self, e: QKeyEvent) -> None:
        if e.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            back = bool(e.modifiers() & Qt.KeyboardModifier.ShiftModifier)
            self.step.emit(-1 if back else 1)
            return
        if e.key() == Qt.Key.Key_Escape:
            self.escape.emit()
            return
        super().keyPressEvent(e)


class FindBar(QWidget):
    """Find in chat (Ctrl+F). Owns no search logic: the window asks the chat view.

    Signals:
        query_changed(str): the text to find changed.
        step(int): go to the next (+1) or previous (-1) match.
        closed(): the bar was closed (Esc or the close button).
    """

    query_changed = Signal(str)
    step = Signal(int)
    closed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("findBar")
        self.setAccessibleName("Find in chat")
        self.edit = FindEdit(self)
        self.edit.setObjectName("findEdit")
        self.edit.setPlaceholderText("Find in this chat")
        self.edit.setAccessibleName("Find in chat")
        self.edit.setAccessibleDescription("Enter: next match, Shift+Enter: previous, Esc: close")
        self.edit.setClearButtonEnabled(True)
        self.count = QLabel("", self)
        self.count.setObjectName("findCount")
        self.count.setAccessibleName("Matches")
        self.previous_button = self._button("▲", "Previous match (Shift+Enter)", -1)
        self.next_button = self._button("▼", "Next match (Enter)", 1)
        self.close_button = QToolButton(self)
        self.close_button.setText("✕")
        self.close_button.setToolTip("Close (Esc)")
        self.close_button.setAccessibleName("Close find")
        self.close_button.clicked.connect(self.close_bar)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(16, 4, 12, 4)
        lay.setSpacing(6)
        lay.addWidget(self.edit, 1)
        lay.addWidget(self.count)
        lay.addWidget(self.previous_button)
        lay.addWidget(self.next_button)
        lay.addWidget(self.close_button)
        self.edit.textChanged.connect(self.query_changed)
        self.edit.step.connect(self.step)
        self.edit.escape.connect(self.close_bar)
        self.hide()

    def _button(self, text: str, tip: str, direction: int) -> QToolButton:
        b = QToolButton(self)
        b.setText(text)
        b.setToolTip(tip)
        b.setAccessibleName(tip.split(" (", maxsplit=1)[0])
        b.clicked.connect(lambda: self.step.emit(direction))
        return b

    def open(self, query: str | None = None) -> None:
        """Show the bar with the keyboard in it (and `query` in the box, when given)."""
        self.show()
        if query is not None and query != self.edit.text():
            self.edit.setText(query)
        self.edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.edit.selectAll()

    def show_found(self, query: str) -> None:
        """Show the bar with `query` in it, the keyboard left where it was (a search hit)."""
        self.open(query)
        self.edit.deselect()
        self.edit.clearFocus()

    def query(self) -> str:
        return self.edit.text()

    def set_count(self, current: int, total: int) -> None:
        """Show "current of total" (1-based), or that nothing matched."""
        if not self.edit.text().strip():
            self.count.setText("")
        elif total == 0:
            self.count.setText("No matches")
        else:
            self.count.setText(f"{current} of {total}")

    def close_bar(self) -> None:
        self.hide()
        self.closed.emit()
