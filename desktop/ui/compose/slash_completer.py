"""Completion of the gateway's slash commands in the composer ("/" at the start of a message)."""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QAbstractItemView, QCompleter, QPlainTextEdit

NAME_ROLE = Qt.ItemDataRole.UserRole + 1


class SlashCompleter(QObject):
    """Offers `/commands` while the message is a single word starting with "/".

    The popup lists each command with its description; Enter or Tab takes the highlighted
    one, Esc closes the popup. With no commands (a gateway without a catalog) it never shows.
    """

    def __init__(self, edit: QPlainTextEdit) -> None:
        super().__init__(edit)
        self.edit = edit
        self.model = QStandardItemModel(self)
        self.completer = QCompleter(self.model, self)
        self.completer.setWidget(edit)
        self.completer.setCompletionRole(NAME_ROLE)
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer.setCompletionMode(QCompleter.CompletionMode.PopupCompletion)
        self.completer.setMaxVisibleItems(8)
        self._popup().setAccessibleName("Slash commands")
        # PySide6 picks the overload by subscript; its stubs do not model the subscript.
        self.completer.activated[str].connect(  # type: ignore[index]
            self._on_completer_activated
        )
        edit.textChanged.connect(self._on_edit_text_changed)
        self.names: set[str] = set()

    def set_commands(self, commands: list[tuple[str, str]]) -> None:
        self.model.clear()
        self.names = {name.lower() for name, _ in commands}
        for name, description in commands:
            item = QStandardItem(f"{name}  —  {description}" if description else name)
            item.setData(name, NAME_ROLE)
            item.setToolTip(description)
            self.model.appendRow(item)

    def _popup(self) -> QAbstractItemView:
        popup = self.completer.popup()
        assert popup is not None  # a QCompleter always has one once constructed
        return popup

    def popup_visible(self) -> bool:
        return self._popup().isVisible()

    def is_command(self, text: str) -> bool:
        """Whether `text` is one of the gateway's slash commands (with its arguments)."""
        word = text.strip().split(maxsplit=1)[0].lower() if text.strip() else ""
        return word.startswith("/") and word in self.names

    def _on_edit_text_changed(self) -> None:
        text = self.edit.toPlainText()
        if not self.names or not text.startswith("/") or any(c.isspace() for c in text):
            self._popup().hide()
            return
        self.completer.setCompletionPrefix(text)
        if self.completer.completionCount() == 0:
            self._popup().hide()
            return
        rect = self.edit.cursorRect()
        rect.setWidth(max(320, self.edit.width() // 2))
        self.completer.complete(rect)
        # The best match is highlighted: Enter or Tab takes it without an arrow key first.
        self._popup().setCurrentIndex(self.completer.completionModel().index(0, 0))

    def _on_completer_activated(self, name: str) -> None:
        self.edit.setPlainText(f"{name} ")
        cursor = self.edit.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)
        self.edit.setTextCursor(cursor)
