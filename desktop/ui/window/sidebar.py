"""The sidebar: the profile picker, New chat and Settings, chat search and the chat list."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QEvent, QItemSelectionModel, QModelIndex, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLineEdit,
    QListView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.core.models import SessionSummary
from desktop.ui.backend import SearchHit
from desktop.ui.platform.resources import icon
from desktop.ui.sessions.session_list import (
    KEY_ROLE,
    SessionDelegate,
    SessionFilter,
    SessionListModel,
    best_hits,
)


def tool_button(parent: QWidget, name: str, text: str, description: str) -> QToolButton:
    """An icon button with its tooltip and accessible name and description."""
    b = QToolButton(parent)
    b.setIcon(icon(name))
    b.setToolTip(description)
    b.setAccessibleName(text)
    b.setAccessibleDescription(description)
    return b


class Sidebar(QWidget):
    """Lists profiles and chats; filtering and selection live here, opening a chat does not.

    Signals:
        profile_chosen(str): the user picked a profile in the combo box.
        session_selected(str): a chat became the list's current one (keyboard or mouse).
        session_activated(str): a chat was clicked or activated (Enter), e.g. a search result.
        search_entered(): Enter in the search box took its first result.
    """

    profile_chosen = Signal(str)
    session_selected = Signal(str)
    session_activated = Signal(str)
    search_entered = Signal()

    def __init__(self, parent: QWidget | None = None, *, wall: Callable[[], float] = time.time):
        super().__init__(parent)
        self.setObjectName("sidebar")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)  # the theme paints it
        self.profile_combo = QComboBox(self)
        self.profile_combo.setObjectName("profileCombo")
        self.profile_combo.setAccessibleName("Profile")
        self.profile_combo.setAccessibleDescription("Which gateway to chat with")
        self.profile_combo.currentIndexChanged.connect(self._on_profile_combo_changed)
        self.new_chat_button = tool_button(
            self, "new-chat", "New chat", "Start a new chat (Ctrl+N)"
        )
        self.settings_button = tool_button(self, "settings", "Settings", "Open settings (Ctrl+,)")
        self.search_box = QLineEdit(self)
        self.search_box.setObjectName("searchBox")
        self.search_box.setPlaceholderText("Search chats and messages")
        self.search_box.setClearButtonEnabled(True)
        self.search_box.setAccessibleName("Search")
        self.search_box.setAccessibleDescription(
            "Filter chats by title or message text; Enter opens the first, Esc clears"
        )
        self.search_box.installEventFilter(self)
        # Filtering moves the list's current row; that is not the user choosing a chat.
        self._filtering = False
        self._open_key: str | None = None  # the chat last marked current (the open one)
        self._archived = 0  # how many listed chats are archived
        self.session_model = SessionListModel(self)
        self.session_filter = SessionFilter(self)
        self.session_filter.setSourceModel(self.session_model)
        self.session_list = QListView(self)
        self.session_list.setObjectName("sessionList")
        self.session_list.setAccessibleName("Chats")
        self.session_list.setAccessibleDescription("Your chats, newest first")
        self.session_list.setModel(self.session_filter)
        self.session_list.setItemDelegate(SessionDelegate(self.session_list, now=wall))
        self.session_list.setUniformItemSizes(True)
        self.session_list.setMouseTracking(True)
        self.session_list.setVerticalScrollMode(QListView.ScrollMode.ScrollPerPixel)
        # Ctrl/Shift+click and Shift+arrows select several chats for Archive or Delete.
        self.session_list.setSelectionMode(QListView.SelectionMode.ExtendedSelection)
        # The window's Rename/Delete/Export actions double as the context menu.
        self.session_list.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self.search_box.returnPressed.connect(self._on_search_box_return_pressed)
        self.session_list.selectionModel().currentChanged.connect(
            self._on_session_list_current_changed
        )
        self.session_list.clicked.connect(self._on_session_list_activated)
        self.session_list.activated.connect(self._on_session_list_activated)
        top = QHBoxLayout()
        top.setSpacing(6)
        top.addWidget(self.profile_combo, 1)
        top.addWidget(self.new_chat_button)
        top.addWidget(self.settings_button)
        side = QVBoxLayout(self)
        side.setContentsMargins(10, 10, 10, 6)
        side.setSpacing(8)
        side.addLayout(top)
        side.addWidget(self.search_box)
        side.addWidget(self.session_list, 1)
        self.archived_button = QToolButton(self)
        self.archived_button.setObjectName("archivedButton")
        self.archived_button.setCheckable(True)
        self.archived_button.setAutoRaise(True)
        self.archived_button.setAccessibleDescription("Show the archived chats, or the others")
        self.archived_button.toggled.connect(self._on_archived_toggled)
        self.archived_button.hide()  # until a chat is archived
        side.addWidget(self.archived_button)

    def focus_chain(self) -> list[QWidget]:
        """Its focusable widgets in Tab order, for the window's own order."""
        return [
            self.profile_combo,
            self.new_chat_button,
            self.settings_button,
            self.search_box,
            self.session_list,
        ]

    # -- profiles -----------------------------------------------------------------------------

    def add_profile(self, profile_id: str, name: str) -> None:
        """List a profile (choosing it stays with the window: no signal)."""
        self.profile_combo.blockSignals(True)
        self.profile_combo.addItem(name, profile_id)
        self.profile_combo.blockSignals(False)

    def rename_profile(self, profile_id: str, name: str) -> None:
        idx = self.profile_combo.findData(profile_id)
        if idx >= 0:
            self.profile_combo.setItemText(idx, name)

    def remove_profile(self, profile_id: str) -> None:
        self.profile_combo.blockSignals(True)
        self.profile_combo.removeItem(self.profile_combo.findData(profile_id))
        self.profile_combo.blockSignals(False)

    def first_profile(self) -> str:
        """The profile listed first ("" when there is none)."""
        first = self.profile_combo.itemData(0) if self.profile_combo.count() else ""
        return str(first or "")

    def show_profile(self, profile_id: str) -> None:
        idx = self.profile_combo.findData(profile_id)
        if idx != self.profile_combo.currentIndex():
            self.profile_combo.setCurrentIndex(idx)

    def _on_profile_combo_changed(self, index: int) -> None:
        profile_id = self.profile_combo.itemData(index)
        if profile_id:
            self.profile_chosen.emit(str(profile_id))

    # -- chats --------------------------------------------------------------------------------

    def set_sessions(self, sessions: list[SessionSummary]) -> None:
        self.session_model.set_sessions(sessions)
        self._archived = sum(s.archived for s in sessions)
        self._show_archived_button()

    def _show_archived_button(self) -> None:
        on = self.archived_button.isChecked()
        text = "Back to chats" if on else f"Archived ({self._archived})"
        self.archived_button.setText(text)
        self.archived_button.setAccessibleName(text)
        self.archived_button.setVisible(on or self._archived > 0)

    def _on_archived_toggled(self, on: bool) -> None:
        self.session_filter.set_archived_view(on)
        self.session_list.setAccessibleName("Archived chats" if on else "Chats")
        self._show_archived_button()

    def session(self, key: str) -> SessionSummary | None:
        return self.session_model.session(key)

    def has_session(self, key: str) -> bool:
        return self.session_model.row_of(key) is not None

    def select(self, key: str) -> None:
        """Mark `key` as the current chat in the list (if it is listed)."""
        self._open_key = key
        row = self.session_model.row_of(key)
        if row is None:
            return
        proxy_index = self.session_filter.mapFromSource(self.session_model.index(row))
        if proxy_index.isValid() and self.session_list.currentIndex() != proxy_index:
            self.session_list.selectionModel().setCurrentIndex(
                proxy_index, QItemSelectionModel.SelectionFlag.ClearAndSelect
            )

    def selected_key(self) -> str | None:
        key = self.session_list.currentIndex().data(KEY_ROLE)
        return str(key) if key else None

    def selected_keys(self) -> list[str]:
        """The selected chats in list order (the current one when none is selected)."""
        rows = sorted(self.session_list.selectionModel().selectedIndexes(), key=lambda i: i.row())
        keys = [str(i.data(KEY_ROLE)) for i in rows if i.data(KEY_ROLE)]
        current = self.selected_key()
        return keys or ([current] if current else [])

    def hide_deleting(self, keys: set[str]) -> None:
        """Leave out chats deleted and still undoable; the current row moving opens nothing."""
        self._filtering = True
        try:
            self.session_filter.set_deleting(keys)
        finally:
            self._filtering = False

    def query(self) -> str:
        """The search box's text, stripped."""
        return self.search_box.text().strip()

    def show_hits(self, text: str, hits: list[SearchHit]) -> None:
        """Filter the list to the chats `hits` found for `text` (all chats when it is empty)."""
        keys = list(dict.fromkeys(hit.session_key for hit in hits))
        kept = self._open_key
        self._filtering = True
        try:
            self.session_filter.set_query(text, keys, best_hits(hits))
            row = self.session_model.row_of(kept) if kept else None
            index = (
                self.session_filter.mapFromSource(self.session_model.index(row))
                if row is not None
                else QModelIndex()
            )
            # The open chat stays current where it is still listed; else no row is current.
            self.session_list.selectionModel().setCurrentIndex(
                index, QItemSelectionModel.SelectionFlag.ClearAndSelect
            )
        finally:
            self._filtering = False

    def hit(self, key: str) -> SearchHit | None:
        """The best search hit in chat `key` for the current query."""
        return self.session_filter.hits.get(key)

    def _on_session_list_current_changed(self, current: QModelIndex, _prev: QModelIndex) -> None:
        key = current.data(KEY_ROLE)
        if key and not self._filtering:
            self.session_selected.emit(str(key))

    def _on_session_list_activated(self, index: QModelIndex) -> None:
        key = index.data(KEY_ROLE)
        if key:
            self.session_activated.emit(str(key))

    def _on_search_box_return_pressed(self) -> None:
        # Enter in the search box lands on the first result's matching message.
        first = self.session_filter.index(0, 0)
        if not first.isValid():
            return
        self.session_list.setCurrentIndex(first)
        self._on_session_list_activated(first)
        self.search_entered.emit()

    def eventFilter(self, watched: QObject, e: QEvent) -> bool:
        # Esc in a search box holding text clears it (before the window's "stop" shortcut).
        if (
            watched is self.search_box
            and isinstance(e, QKeyEvent)
            and self.search_box.text()
            and e.key() == Qt.Key.Key_Escape
            and e.modifiers() == Qt.KeyboardModifier.NoModifier
        ):
            if e.type() == QEvent.Type.ShortcutOverride:
                e.accept()
                return True
            if e.type() == QEvent.Type.KeyPress:
                self.search_box.clear()
                return True
        return super().eventFilter(watched, e)

    def focus_search(self) -> None:
        self.search_box.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search_box.selectAll()

    def set_icon_tint(self, tint: str) -> None:
        for button, name in (
            (self.new_chat_button, "new-chat"),
            (self.settings_button, "settings"),
        ):
            button.setIcon(icon(name, tint))
        delegate = self.session_list.itemDelegate()
        if isinstance(delegate, SessionDelegate):
            delegate.tint = tint
        self.session_list.viewport().update()
