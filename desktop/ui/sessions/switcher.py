"""The Ctrl+K quick switcher: type to filter sessions, Enter opens the first match."""

from __future__ import annotations

from PySide6.QtCore import (
    QEvent,
    QItemSelectionModel,
    QModelIndex,
    QObject,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QKeyEvent, QPalette
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
        self.query.textChanged.connect(self._on_query_text_changed)
        self.query.returnPressed.connect(self._on_query_return_pressed)
        self.query.installEventFilter(self)
        self.list = QListView(self)
        self.list.setModel(self.proxy)
        self.list.setAccessibleName("Matching sessions")
        self.list.setObjectName("switcherList")
        # One line each: sized from the first row, not every chat's asked (10,000 chats cost
        # ~0.3 s at each style change, at start too).
        self.list.setUniformItemSizes(True)
        # The keyboard stays in the query box: the highlight keeps its active colour.
        pal = self.list.palette()
        for role in (QPalette.ColorRole.Highlight, QPalette.ColorRole.HighlightedText):
            pal.setColor(
                QPalette.ColorGroup.Inactive, role, pal.color(QPalette.ColorGroup.Active, role)
            )
        self.list.setPalette(pal)
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
        self._highlight_first()
        self.show()
        self.query.setFocus()

    def _on_query_text_changed(self, text: str) -> None:
        self.proxy.setFilterFixedString(text)
        self._highlight_first()

    def _highlight_first(self) -> None:
        """The row Enter opens is the highlighted one: the first match."""
        first = self.proxy.index(0, 0)
        self.list.setCurrentIndex(first)
        if first.isValid():
            self.list.selectionModel().select(
                first, QItemSelectionModel.SelectionFlag.ClearAndSelect
            )

    def eventFilter(self, watched: QObject, e: QEvent) -> bool:
        if (
            watched is self.query
            and isinstance(e, QKeyEvent)
            and e.type() == QEvent.Type.KeyPress
            and e.key() in (Qt.Key.Key_Down, Qt.Key.Key_Up)
        ):
            # Up/Down move the highlight from the query box; Enter opens the highlighted row.
            row = self.list.currentIndex().row() + (1 if e.key() == Qt.Key.Key_Down else -1)
            index = self.proxy.index(max(0, min(row, self.proxy.rowCount() - 1)), 0)
            if index.isValid():
                self.list.setCurrentIndex(index)
            return True
        return super().eventFilter(watched, e)

    def _on_query_return_pressed(self) -> None:
        current = self.list.currentIndex()
        if current.isValid():
            self._on_list_activated(current)
        elif self.proxy.rowCount():
            self._on_list_activated(self.proxy.index(0, 0))

    def _on_list_activated(self, index: QModelIndex) -> None:
        key = index.data(KEY_ROLE)
        if key:
            self.hide()
            self.session_chosen.emit(str(key))
