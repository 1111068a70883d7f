"""Deleting chats with an undo window: the chats leave the list at once, the gateway is told later.

A toast at the bottom of the window says what was deleted and offers Undo (a button, and Ctrl+Z
while it shows) for UNDO_MS; only then is each chat's backend asked to delete it. Closing the
window tells the gateway at once (the user meant it and the toast is gone).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from desktop.ui.backend import ChatBackend

UNDO_MS = 5000


@dataclass(frozen=True, slots=True)
class PendingDelete:
    backend: ChatBackend
    keys: tuple[str, ...]


class UndoToast(QFrame):
    """ "Deleted “…”  [Undo]", floating at the bottom centre of its parent."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("undoToast")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setStyleSheet(
            "#undoToast { background: palette(base); border: 1px solid palette(mid);"
            " border-radius: 10px; }"
        )
        self.setAccessibleName("Chat deleted")
        self.label = QLabel(self)
        self.undo_button = QPushButton("Undo", self)
        self.undo_button.setAccessibleName("Undo delete")
        self.undo_button.setAccessibleDescription("Put the deleted chats back (Ctrl+Z)")
        row = QHBoxLayout(self)
        row.setContentsMargins(14, 6, 8, 6)
        row.setSpacing(12)
        row.addWidget(self.label, 1)
        row.addWidget(self.undo_button)
        self.hide()
        parent.installEventFilter(self)

    def show_text(self, text: str) -> None:
        self.label.setText(text)
        self.setAccessibleDescription(f"{text}; Undo puts it back")
        self.adjustSize()
        self._place()
        self.show()
        self.raise_()

    def _place(self) -> None:
        parent = self.parentWidget()
        if parent is not None:
            self.move((parent.width() - self.width()) // 2, parent.height() - self.height() - 64)

    def eventFilter(self, watched: QObject, e: QEvent) -> bool:
        if e.type() == QEvent.Type.Resize and self.isVisible():
            self._place()
        return super().eventFilter(watched, e)


class UndoDeletes:
    """Holds the last delete for UNDO_MS, then passes it on; an earlier one is passed on at once."""

    def __init__(self, parent: QWidget, on_hidden: Callable[[set[str]], None]) -> None:
        self._on_hidden = on_hidden  # the keys to leave out of the list meanwhile
        self._pending: PendingDelete | None = None
        self.toast = UndoToast(parent)
        self.timer = QTimer(parent)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self.commit)
        self.toast.undo_button.clicked.connect(self.undo)
        self.undo_shortcut = QShortcut(QKeySequence.StandardKey.Undo, parent)
        self.undo_shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
        self.undo_shortcut.setEnabled(False)
        self.undo_shortcut.activated.connect(self.undo)

    @property
    def pending(self) -> tuple[str, ...]:
        return self._pending.keys if self._pending else ()

    def delete(self, backend: ChatBackend, keys: list[str], text: str) -> None:
        self.commit()
        self._pending = PendingDelete(backend, tuple(keys))
        self._on_hidden(set(keys))
        self.toast.show_text(text)
        self.undo_shortcut.setEnabled(True)
        self.timer.start(UNDO_MS)

    def undo(self) -> None:
        """Put the pending chats back; the gateway never hears of them."""
        if self._pending is None:
            return
        self._pending = None
        self._finish()

    def commit(self) -> None:
        """Tell the gateway now (the window passed, another delete, or the window closes)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        for key in pending.keys:
            pending.backend.delete_session(key)
        self._finish()

    def _finish(self) -> None:
        self.timer.stop()
        self.toast.hide()
        self.undo_shortcut.setEnabled(False)
        self._on_hidden(set())
