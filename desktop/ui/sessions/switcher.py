"""The Ctrl+K quick switcher: type to filter sessions, Enter opens the first match."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFrame, QLineEdit, QListView, QVBoxLayout, QWidget

from desktop.ui.sessions.session_list import KEY_ROLE, SessionListModel


class SessionSwitcher(QFrame):
    """A popup over the session list model.

    Signals:
        session_chosen(str): the key of the chosen session.
    """

    session_chosen = Signal(str)

    def __init__(self, model: SessionListModel, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Popup)
        self.setAccessibleName("Session switcher")
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(model)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.query = QLineEdit(self)
        self.query.setPlaceholderText("Jump to a chat…")
        self.query.setAccessibleName("Session name")
        self.query.textChanged.connect(self.proxy.setFilterFixedString)
        self.query.returnPressed.connect(self._on_query_return_pressed)
        self.list = QListView(self)
        self.list.setModel(self.proxy)
        self.list.setAccessibleName("Matching sessions")
        self.list.activated.connect(self._on_list_activated)
        lay = QVBoxLayout(self)
        lay.addWidget(self.query)
        lay.addWidget(self.list)
        self.resize(380, 300)

    def popup(self) -> None:
        """Show centred over the parent window with an empty query."""
        self.query.clear()
        parent = self.parentWidget()
        if parent is not None:
            center = parent.mapToGlobal(parent.rect().center())
            self.move(center.x() - self.width() // 2, center.y() - self.height() // 2)
        self.show()
        self.query.setFocus()

    def keyPressEvent(self, e: QKeyEvent) -> None:
        if e.key() == Qt.Key.Key_Down:
            self.list.setFocus()
        super().keyPressEvent(e)

    def _on_query_return_pressed(self) -> None:
        if self.proxy.rowCount():
            self._on_list_activated(self.proxy.index(0, 0))

    def _on_list_activated(self, index: QModelIndex) -> None:
        key = index.data(KEY_ROLE)
        if key:
            self.hide()
            self.session_chosen.emit(str(key))
