"""The main window: profiles, session list, chat view, composer and connection area."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PySide6.QtCore import QByteArray, QItemSelectionModel, QModelIndex, QSettings, Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLineEdit,
    QListView,
    QMainWindow,
    QMenu,
    QMessageBox,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.core.errors import StorageError
from desktop.core.models import (
    Attachment,
    ChatMessage,
    ConnectionStatus,
    ModelChoice,
    Role,
    SessionInfo,
    SessionSummary,
)
from desktop.ui.backend import ApprovalRequest, ChatBackend, Draft
from desktop.ui.chat.approval import ApprovalCard
from desktop.ui.chat.find_bar import FindBar
from desktop.ui.chat.view import ChatView
from desktop.ui.compose.composer import (
    Composer,
    mime_files,
    mime_image_png,
    store_files,
    store_image,
)
from desktop.ui.platform.announce import announce
from desktop.ui.platform.resources import icon
from desktop.ui.platform.tray import Tray
from desktop.ui.render.markdown import plain_text
from desktop.ui.render.usage import context_text, todo_text
from desktop.ui.render.wrap import ElidingLabel, WrappingLabel
from desktop.ui.sessions.session_list import (
    KEY_ROLE,
    SessionDelegate,
    SessionFilter,
    SessionListModel,
    best_hits,
    snippet_runs,
)
from desktop.ui.sessions.switcher import SessionSwitcher
from desktop.ui.settings.values import AppSettings, SettingsChecks
from desktop.ui.shortcuts import SHORTCUTS, ShortcutsDialog, key_sequences
from desktop.ui.theme import Colors
from desktop.ui.window.bridge import BackendBridge
from desktop.ui.window.details import DetailsDialog
from desktop.ui.window.status_bar import ConnectionWidget


@dataclass(frozen=True, slots=True)
class ProfileEntry:
    """A profile as the window lists it."""

    name: str
    backend: ChatBackend


class MainWindow(QMainWindow):
    """Composes the widgets; events of a profile other than the current one never reach the view.

    Signals:
        settings_saved(object): AppSettings the user saved in the settings dialog.
        quit_requested(): the user chose Quit (tray menu).
    """

    settings_saved = Signal(object)
    quit_requested = Signal()

    def __init__(
        self,
        profiles: Sequence[ProfileEntry],
        settings: QSettings,
        *,
        app_settings: Callable[[], AppSettings] = AppSettings,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        super().__init__()
        self.setWindowTitle("Hermes")
        self.setWindowIcon(icon("app"))
        self.setAccessibleName("Hermes chat")
        self._settings = settings
        self._app_settings = app_settings
        self._profiles: dict[str, ProfileEntry] = {}
        self._bridges: dict[str, BackendBridge] = {}
        self._profile_id = ""
        self._session_key: str | None = None
        # The session whose search hit is shown again when its history is replaced, and whether
        # it waits for older pages of a paged history (see jump_to_hit).
        self._pending_hit: tuple[str, bool] | None = None
        self._draft_announced = False
        self.close_to_tray = False
        self.settings_checks: SettingsChecks | None = None  # run by Settings' Test buttons
        self._build(monotonic, wall)
        self._build_actions()
        self.tray = Tray(self)
        self.tray.show_requested.connect(self._on_tray_show_requested)
        self.tray.quit_requested.connect(self.quit_requested)
        self.tray.chat_requested.connect(self._on_tray_chat_requested)
        self.profile_combo.blockSignals(True)
        for entry in profiles:
            self._attach(entry)
        self.profile_combo.blockSignals(False)
        self._restore_state()

    def _attach(self, entry: ProfileEntry) -> None:
        profile_id = entry.backend.profile_id
        self._profiles[profile_id] = entry
        bridge = BackendBridge(entry.backend, self)
        self._connect_bridge(bridge)
        self._bridges[profile_id] = bridge
        self.profile_combo.addItem(entry.name, profile_id)

    def add_profile(self, entry: ProfileEntry) -> None:
        """A profile was added in Settings: list it (and show it if it is the only one)."""
        self._attach(entry)
        if not self._profile_id:
            self.switch_profile(entry.backend.profile_id)

    def rename_profile(self, profile_id: str, name: str) -> None:
        """Show a profile under its new name."""
        idx = self.profile_combo.findData(profile_id)
        if idx >= 0:
            self.profile_combo.setItemText(idx, name)

    def remove_profile(self, profile_id: str) -> None:
        """A profile was removed: nothing of it is shown or heard from again."""
        entry = self._profiles.pop(profile_id, None)
        if entry is None:
            return
        bridge = self._bridges.pop(profile_id)
        bridge.detach()
        bridge.deleteLater()
        idx = self.profile_combo.findData(profile_id)
        self.profile_combo.blockSignals(True)
        self.profile_combo.removeItem(idx)
        self.profile_combo.blockSignals(False)
        if self._profile_id == profile_id:
            self._profile_id = ""
            first = self.profile_combo.itemData(0)
            if first:
                self.switch_profile(str(first))

    # -- construction -----------------------------------------------------------------------

    def _build(self, monotonic: Callable[[], float], wall: Callable[[], float]) -> None:
        sidebar = QWidget(self)
        sidebar.setObjectName("sidebar")
        self.profile_combo = QComboBox(sidebar)
        self.profile_combo.setObjectName("profileCombo")
        self.profile_combo.setAccessibleName("Profile")
        self.profile_combo.setAccessibleDescription("Which gateway to chat with")
        self.profile_combo.currentIndexChanged.connect(self._on_profile_combo_changed)
        self.new_chat_button = self._tool("new-chat", "New chat", "Start a new chat (Ctrl+N)")
        self.new_chat_button.clicked.connect(self.new_chat)
        self.settings_button = self._tool("settings", "Settings", "Open settings (Ctrl+,)")
        self.settings_button.clicked.connect(self.open_settings)
        self.search_box = QLineEdit(sidebar)
        self.search_box.setObjectName("searchBox")
        self.search_box.setPlaceholderText("Search chats and messages")
        self.search_box.setClearButtonEnabled(True)
        self.search_box.setAccessibleName("Search")
        self.search_box.setAccessibleDescription("Filter chats by title or message text")
        self.search_box.textChanged.connect(self._on_search_box_text_changed)
        self.session_model = SessionListModel(self)
        self.session_filter = SessionFilter(self)
        self.session_filter.setSourceModel(self.session_model)
        self.session_list = QListView(sidebar)
        self.session_list.setObjectName("sessionList")
        self.session_list.setAccessibleName("Chats")
        self.session_list.setAccessibleDescription("Your chats, newest first")
        self.session_list.setModel(self.session_filter)
        self.session_list.setItemDelegate(SessionDelegate(self.session_list, now=wall))
        self.session_list.setUniformItemSizes(True)
        self.session_list.setMouseTracking(True)
        self.session_list.setVerticalScrollMode(QListView.ScrollMode.ScrollPerPixel)
        # Rename/Delete actions (added in _build_actions) double as the context menu.
        self.session_list.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self.session_list.selectionModel().currentChanged.connect(
            self._on_session_list_current_changed
        )
        self.session_list.clicked.connect(self._on_session_list_activated)
        self.session_list.activated.connect(self._on_session_list_activated)
        self.search_box.returnPressed.connect(self._on_search_box_return_pressed)
        top = QHBoxLayout()
        top.setSpacing(6)
        top.addWidget(self.profile_combo, 1)
        top.addWidget(self.new_chat_button)
        top.addWidget(self.settings_button)
        side = QVBoxLayout(sidebar)
        side.setContentsMargins(10, 10, 10, 6)
        side.setSpacing(8)
        side.addLayout(top)
        side.addWidget(self.search_box)
        side.addWidget(self.session_list, 1)

        pane = QWidget(self)
        pane.setObjectName("chatPane")
        status_area = QWidget(pane)
        status_area.setObjectName("statusArea")
        self.title_label = ElidingLabel("", status_area)
        self.title_label.setObjectName("chatTitle")
        self.title_label.setAccessibleName("Chat title")
        font = self.title_label.font()
        font.setPointSizeF(font.pointSizeF() + 1.5)
        font.setWeight(font.Weight.DemiBold)
        self.title_label.setFont(font)
        self.connection = ConnectionWidget(status_area, monotonic=monotonic, wall=wall)
        self.connection.reconnect_requested.connect(self._on_connection_reconnect_requested)
        self.connection.pause_requested.connect(self._on_connection_pause_requested)
        self.connection.resume_requested.connect(self._on_connection_resume_requested)
        self.connection.details_requested.connect(self._on_connection_details_requested)
        # The session's model; a menu switches it where the gateway offers models.
        self.model_label = QToolButton(status_area)
        self.model_label.setObjectName("modelLabel")
        self.model_label.setAccessibleName("Model")
        self.model_label.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.model_label.hide()
        self.model_menu = QMenu(self.model_label)
        self.model_menu.setAccessibleName("Switch model")
        st = QHBoxLayout(status_area)
        st.setContentsMargins(16, 8, 12, 8)
        # How full the model's context is (Hermes 0.22 session.usage), beside the model.
        self.context_label = ElidingLabel("", status_area)
        self.context_label.setObjectName("contextLabel")
        self.context_label.setAccessibleName("Context used")
        self.context_label.hide()
        st.addWidget(self.title_label, 1)
        st.addWidget(self.context_label)
        st.addWidget(self.model_label)
        st.addWidget(self.connection)
        self.notice_label = WrappingLabel("", pane)
        self.notice_label.setObjectName("noticeLabel")
        self.notice_label.setAccessibleName("Notice")
        self.notice_label.setWordWrap(True)
        self.notice_label.setContentsMargins(16, 4, 16, 4)
        self.notice_label.hide()
        self.chat_view = ChatView(pane)
        self.chat_view.action_requested.connect(self._on_chat_view_action_requested)
        self.chat_view.code_copied.connect(self._on_chat_view_code_copied)
        self.chat_view.text_copied.connect(self._on_chat_view_text_copied)
        self.chat_view.quote_requested.connect(self._on_chat_view_quote_requested)
        self.chat_view.older_wanted.connect(self._on_chat_view_older_wanted)
        self.chat_view.newer_wanted.connect(self._on_chat_view_newer_wanted)
        self.chat_view.live_end_wanted.connect(self._on_chat_view_live_end_wanted)
        # Hermes' transient status text while a turn runs (each replaces the last).
        self.activity_label = ElidingLabel("", pane)
        self.activity_label.setObjectName("activityLabel")
        self.activity_label.setAccessibleName("Agent status")
        self.activity_label.setContentsMargins(20, 2, 16, 2)
        self.activity_label.hide()
        # The agent's task list (Hermes 0.22 todo.updated): one line, every item in its tooltip.
        self.todo_label = ElidingLabel("", pane)
        self.todo_label.setObjectName("todoLabel")
        self.todo_label.setAccessibleName("Agent tasks")
        self.todo_label.setContentsMargins(20, 2, 16, 2)
        self.todo_label.hide()
        self.approvals = QWidget(pane)
        self.approvals.setAccessibleName("Pending requests")
        self.approvals_layout = QVBoxLayout(self.approvals)
        self.approvals_layout.setContentsMargins(16, 0, 16, 0)
        self.approvals.hide()
        self.composer = Composer(pane)
        self.composer.send_requested.connect(self._on_composer_send_requested)
        self.composer.stop_requested.connect(self._on_composer_stop_requested)
        self.composer.draft_changed.connect(self._on_composer_draft_changed)
        self.composer.files_to_attach.connect(self._on_composer_files_to_attach)
        self.composer.image_to_attach.connect(self._on_composer_image_to_attach)
        right = QVBoxLayout(pane)
        right.setContentsMargins(0, 0, 0, 0)
        right.setSpacing(0)
        right.addWidget(status_area)
        right.addWidget(self.notice_label)
        self.find_bar = FindBar(pane)
        self.find_bar.query_changed.connect(self._on_find_bar_query_changed)
        self.find_bar.step.connect(self._on_find_bar_step)
        self.find_bar.closed.connect(self._on_find_bar_closed)
        self._find_match = -1
        right.addWidget(self.find_bar)
        right.addWidget(self.chat_view, 1)
        right.addWidget(self.todo_label)
        right.addWidget(self.activity_label)
        right.addWidget(self.approvals)
        right.addWidget(self.composer)

        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.setAccessibleName("Sidebar and chat")
        self.splitter.addWidget(sidebar)
        self.splitter.addWidget(pane)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([280, 720])
        self.splitter.setChildrenCollapsible(False)
        self.setCentralWidget(self.splitter)
        self.switcher = SessionSwitcher(self.session_model, self)
        self.switcher.session_chosen.connect(self.open_session)
        self.details = DetailsDialog(self)
        for a, b in (
            (self.profile_combo, self.new_chat_button),
            (self.new_chat_button, self.settings_button),
            (self.settings_button, self.search_box),
            (self.search_box, self.session_list),
            (self.session_list, self.chat_view),
            (self.chat_view, self.composer.attach_button),
            (self.composer.attach_button, self.composer.edit),
            (self.composer.edit, self.composer.send_button),
            (self.composer.send_button, self.composer.stop_button),
            (self.composer.stop_button, self.connection.reconnect_button),
        ):
            QWidget.setTabOrder(a, b)
        self.resize(1040, 700)
        self.setAcceptDrops(True)

    def _tool(self, name: str, text: str, description: str) -> QToolButton:
        b = QToolButton(self)
        b.setIcon(icon(name))
        b.setToolTip(description)
        b.setAccessibleName(text)
        b.setAccessibleDescription(description)
        return b

    def _build_actions(self) -> None:
        handlers: dict[str, Callable[[], None]] = {
            "new_chat": self.new_chat,
            "switch_session": self.show_switcher,
            "focus_composer": self.focus_composer,
            "search": self.find_in_chat,
            "search_chats": self.focus_search,
            "stop": self.stop,
            "settings": self.open_settings,
            "shortcuts": self.show_shortcuts,
            "export_session": self.export_session,
            "rename_session": self._on_rename_action_triggered,
            "delete_session": self._on_delete_action_triggered,
        }
        self.actions_by_name: dict[str, QAction] = {}
        for sc in SHORTCUTS:
            if sc.scope == "messages":
                continue  # the chat view's own actions, on its current message
            action = QAction(sc.description, self)
            action.setShortcuts(key_sequences(sc))
            action.triggered.connect(handlers[sc.action])
            if sc.scope == "sessions":
                action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
                self.session_list.addAction(action)
            else:
                action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
                self.addAction(action)
            self.actions_by_name[sc.action] = action
        # Export is also offered in the chat list's menu (a right click opens the chat first).
        self.session_list.addAction(self.actions_by_name["export_session"])
        self.actions_by_name.update(self.chat_view.actions_by_name)

    def _connect_bridge(self, b: BackendBridge) -> None:
        b.status_changed.connect(self._on_bridge_status_changed)
        b.sessions_changed.connect(self._on_bridge_sessions_changed)
        b.session_key_changed.connect(self._on_bridge_session_key_changed)
        b.messages_reset.connect(self._on_bridge_messages_reset)
        b.messages_prepended.connect(self._on_bridge_messages_prepended)
        b.messages_appended.connect(self._on_bridge_messages_appended)
        b.messages_dropped.connect(self._on_bridge_messages_dropped)
        b.newer_waiting.connect(self._on_bridge_newer_waiting)
        b.live_end_joined.connect(self._on_bridge_live_end_joined)
        b.message_changed.connect(self._on_bridge_message_changed)
        b.message_removed.connect(self._on_bridge_message_removed)
        b.running_changed.connect(self._on_bridge_running_changed)
        b.notice.connect(self._on_bridge_notice)
        b.draft_restored.connect(self._on_bridge_draft_restored)
        b.prompt_restored.connect(self._on_bridge_prompt_restored)
        b.draft_save_state.connect(self._on_bridge_draft_save_state)
        b.approval_requested.connect(self._on_bridge_approval_requested)
        b.approval_closed.connect(self._on_bridge_approval_closed)
        b.session_info.connect(self._on_bridge_session_info)
        b.commands_loaded.connect(self._on_bridge_commands_loaded)
        b.models_loaded.connect(self._on_bridge_models_loaded)

    # -- state ------------------------------------------------------------------------------

    @property
    def profile_id(self) -> str:
        """The profile being shown."""
        return self._profile_id

    @property
    def session_key(self) -> str | None:
        """The open session, if any."""
        return self._session_key

    @property
    def backend(self) -> ChatBackend | None:
        entry = self._profiles.get(self._profile_id)
        return entry.backend if entry else None

    def set_colors(self, colors: Colors) -> None:
        """Apply theme colours to custom-painted widgets."""
        self.chat_view.set_colors(colors)
        self.session_list.viewport().update()
        for button, name in (
            (self.new_chat_button, "new-chat"),
            (self.settings_button, "settings"),
            (self.composer.attach_button, "attach"),
        ):
            button.setIcon(icon(name, colors.icon_tint))

    def set_send_key(self, send_key: str) -> None:
        """Enter or Ctrl+Enter sends."""
        self.composer.set_send_key(send_key)

    def switch_profile(self, profile_id: str) -> None:
        """Show another profile: its sessions, status and last open session."""
        if profile_id not in self._profiles or profile_id == self._profile_id:
            return
        self._profile_id = profile_id
        idx = self.profile_combo.findData(profile_id)
        if idx != self.profile_combo.currentIndex():
            self.profile_combo.setCurrentIndex(idx)
        self._settings.setValue("ui/last_profile", profile_id)
        backend = self._profiles[profile_id].backend
        self._session_key = None
        self.chat_view.show_messages([])
        self.composer.load_draft(None)
        self.composer.set_running(False)
        self.notice_label.hide()
        self._show_approvals()
        self.connection.set_status(backend.status())
        self.session_model.set_sessions(backend.sessions())
        self._update_unread()
        last = self._settings.value(f"ui/last_session/{profile_id}", "")
        if last and self.session_model.row_of(str(last)) is not None:
            self.open_session(str(last))
        else:
            self.title_label.setText("")

    def open_session(self, key: str) -> None:
        """Open a session of the current profile."""
        backend = self.backend
        if backend is None:
            return
        self._session_key = key
        self._pending_hit = None
        self._settings.setValue(f"ui/last_session/{self._profile_id}", key)
        messages = backend.open_session(key)
        self.chat_view.show_messages(messages)
        self.find_bar.hide()
        self._find_match = -1
        summary = self.session_model.session(key)
        self.title_label.setText(summary.title if summary and summary.title else "New chat")
        # A draft left by the previous run is announced (on_draft_restored) while loading it;
        # the announcement shows it with its notice, so only a plain draft is loaded here.
        self._draft_announced = False
        self.composer.load_draft(None)
        draft = backend.load_draft(key)
        if not self._draft_announced:
            self.composer.load_draft(draft)
        self.composer.set_running(bool(summary and summary.running))
        self.composer.edit.slash.set_commands(backend.commands())
        backend.load_commands(key)  # asked of the gateway once per profile
        backend.load_models(key)
        self._show_info()
        self.notice_label.hide()
        self._show_approvals()
        self._select_in_list(key)

    def _select_in_list(self, key: str) -> None:
        row = self.session_model.row_of(key)
        if row is None:
            return
        proxy_index = self.session_filter.mapFromSource(self.session_model.index(row))
        if proxy_index.isValid() and self.session_list.currentIndex() != proxy_index:
            self.session_list.selectionModel().setCurrentIndex(
                proxy_index, QItemSelectionModel.SelectionFlag.ClearAndSelect
            )

    # -- intents ----------------------------------------------------------------------------

    def new_chat(self) -> None:
        """Create and open a new session."""
        backend = self.backend
        if backend is None:
            return
        key = backend.create_session()
        self.session_model.set_sessions(backend.sessions())
        self.open_session(key)
        self.focus_composer()

    def show_switcher(self) -> None:
        """Open the quick session switcher."""
        self.switcher.popup()

    def focus_composer(self) -> None:
        self.composer.edit.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def find_in_chat(self) -> None:
        """Ctrl+F: find in the open chat; with no chat open, search all chats."""
        if self._session_key is None:
            self.focus_search()
            return
        self.find_bar.open()
        self._on_find_bar_query_changed(self.find_bar.edit.text())

    def focus_search(self) -> None:
        self.search_box.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search_box.selectAll()

    def stop(self) -> None:
        """Interrupt the running turn of the open session."""
        if self.backend is not None and self._session_key and self.composer.running:
            self.backend.interrupt(self._session_key)

    @classmethod
    def exec_dialog(cls, dialog: QDialog) -> int:
        """Run a modal dialog (patched in tests)."""
        return int(dialog.exec())

    def open_settings(self) -> None:
        from desktop.ui.settings.dialog import SettingsDialog  # built on demand: off start-up

        dialog = SettingsDialog(
            self._app_settings(), self.settings_saved.emit, self, checks=self.settings_checks
        )
        self.exec_dialog(dialog)
        dialog.deleteLater()

    def show_shortcuts(self) -> None:
        dialog = ShortcutsDialog(self)
        self.exec_dialog(dialog)
        dialog.deleteLater()

    @classmethod
    def ask_text(cls, parent: QWidget, title: str, label: str, text: str) -> str | None:
        """Ask for a line of text (patched in tests); None when cancelled."""
        value, ok = QInputDialog.getText(parent, title, label, text=text)
        return str(value) if ok else None

    @classmethod
    def confirm(cls, parent: QWidget, title: str, text: str) -> bool:
        """Ask a yes/no question (patched in tests)."""
        answer = QMessageBox.question(parent, title, text)
        return bool(answer == QMessageBox.StandardButton.Yes)

    def _selected_key(self) -> str | None:
        key = self.session_list.currentIndex().data(KEY_ROLE)
        return str(key) if key else None

    @classmethod
    def ask_save_path(cls, parent: QWidget, suggested: str) -> str | None:
        """Ask where to export (patched in tests); None when cancelled."""
        path, _ = QFileDialog.getSaveFileName(
            parent,
            "Export chat",
            suggested,
            "Markdown (*.md);;JSON, everything kept (*.json)",
        )
        return str(path) or None

    def export_session(self) -> None:
        """Export the open chat to a Markdown or JSON file the user picks."""
        backend, key = self.backend, self._session_key
        if backend is None or key is None:
            return
        summary = self.session_model.session(key)
        stem = "".join(
            c if c.isalnum() or c in " -_" else "_"
            for c in (summary.title if summary and summary.title else "chat")
        )
        path = self.ask_save_path(self, f"{stem.strip() or 'chat'}.md")
        if not path:
            return
        try:
            backend.export_session(key, path)
        except StorageError as exc:  # ExportError: the chat or the file could not be written
            self.statusBar().showMessage(f"Export failed: {exc}", 8000)
            return
        self.statusBar().showMessage(f"Exported to {path}", 5000)

    def rename_session(self, key: str) -> None:
        """Ask for a new title and pass it to the backend."""
        summary = self.session_model.session(key)
        current = summary.title if summary else ""
        title = self.ask_text(self, "Rename chat", "Title:", current)
        if self.backend is not None and title and title.strip() and title != current:
            self.backend.rename_session(key, title.strip())

    def delete_session(self, key: str) -> None:
        """Delete a chat after confirmation."""
        summary = self.session_model.session(key)
        name = summary.title if summary and summary.title else "this chat"
        if self.backend is None or not self.confirm(self, "Delete chat", f"Delete “{name}”?"):
            return
        self.backend.delete_session(key)
        if key == self._session_key:
            self._session_key = None
            self.chat_view.show_messages([])
            self.composer.load_draft(None)
            self.title_label.setText("")

    def _on_rename_action_triggered(self) -> None:
        key = self._selected_key()
        if key:
            self.rename_session(key)

    def _on_delete_action_triggered(self) -> None:
        key = self._selected_key()
        if key:
            self.delete_session(key)

    def _on_composer_files_to_attach(self, paths: list[str]) -> None:
        backend = self.backend
        if backend is not None:
            self.composer.show_attached(*store_files(paths, backend.attach_file))

    def _on_composer_image_to_attach(self, data: bytes, filename: str) -> None:
        backend = self.backend
        if backend is not None:
            self.composer.show_attached(*store_image(data, filename, backend.attach_bytes))

    # -- persistence ------------------------------------------------------------------------

    def _restore_state(self) -> None:
        geometry = self._settings.value("ui/geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        splitter = self._settings.value("ui/splitter")
        if isinstance(splitter, QByteArray):
            self.splitter.restoreState(splitter)
        last = str(self._settings.value("ui/last_profile", "") or "")
        first = self.profile_combo.itemData(0) if self.profile_combo.count() else ""
        target = last if last in self._profiles else first
        if target:
            self.switch_profile(str(target))

    def save_state(self) -> None:
        """Remember geometry and splitter sizes."""
        self._settings.setValue("ui/geometry", self.saveGeometry())
        self._settings.setValue("ui/splitter", self.splitter.saveState())
        self._settings.sync()

    def _droppable(self, e: QDragEnterEvent | QDragMoveEvent | QDropEvent) -> bool:
        data = e.mimeData()
        return bool(mime_files(data)) or data.hasImage()

    def dragEnterEvent(self, e: QDragEnterEvent) -> None:
        # Files and images dropped anywhere on the window (chat, list, header) are attached.
        if self._droppable(e):
            e.acceptProposedAction()

    def dragMoveEvent(self, e: QDragMoveEvent) -> None:
        if self._droppable(e):
            e.acceptProposedAction()

    def dropEvent(self, e: QDropEvent) -> None:
        files = mime_files(e.mimeData())
        if files:
            self.composer.attach_files(files)
        else:
            png = mime_image_png(e.mimeData())
            if png is None:
                return
            self.composer.attach_image(png)
        e.acceptProposedAction()
        self.focus_composer()

    def closeEvent(self, e: QCloseEvent) -> None:
        self.save_state()
        if self.close_to_tray and self.tray.can_hide_to_tray:
            e.ignore()
            self.hide()
            return
        # Closed for good: no backend callback reaches a closed window while the app shuts down.
        for bridge in self._bridges.values():
            bridge.detach()
        super().closeEvent(e)

    # -- slots: widgets ---------------------------------------------------------------------

    def _on_profile_combo_changed(self, index: int) -> None:
        profile_id = self.profile_combo.itemData(index)
        if profile_id:
            self.switch_profile(str(profile_id))

    def _on_search_box_text_changed(self, text: str) -> None:
        backend = self.backend
        hits = backend.search_hits(text) if backend is not None and text.strip() else []
        keys = list(dict.fromkeys(hit.session_key for hit in hits))
        self.session_filter.set_query(text, keys, best_hits(hits))

    def _on_search_box_return_pressed(self) -> None:
        # Enter in the search box lands on the first result's matching message.
        first = self.session_filter.index(0, 0)
        if not first.isValid():
            return
        self.session_list.setCurrentIndex(first)
        self._on_session_list_activated(first)
        self.chat_view.setFocus(Qt.FocusReason.OtherFocusReason)

    def _on_session_list_activated(self, index: QModelIndex) -> None:
        key = index.data(KEY_ROLE)
        if not key:
            return
        if key != self._session_key:
            self.open_session(str(key))
        self.jump_to_hit(str(key))

    def jump_to_hit(self, key: str) -> None:
        """Show the search hit of session `key`: its message centred, the terms highlighted.

        The hit is shown again when the gateway's history replaces the cached one just shown
        (a reset), and, when it is older than a paged history's loaded window, once the older
        pages holding it arrive.
        """
        shown = self._show_hit(key)
        self._pending_hit = (key, shown == "older") if shown else None

    def _show_hit(self, key: str) -> str:
        """Show the hit if it is loaded: "landed"; else ask for older pages: "older"; "" when
        there is no message hit to show."""
        hit = self.session_filter.hits.get(key)
        query = self.search_box.text().strip()
        if hit is None or key != self._session_key or not query:
            return ""
        terms = [t for t, match in snippet_runs(hit.snippet) if match]
        term = terms[0] if terms else query
        idx = hit.message_idx if hit.source == "message" else None
        backend = self.backend
        last = self.chat_view.last_position(key)
        if idx is not None and last is not None and idx > last and backend is not None:
            # Newer than a window far up (its newer rows let go): from the live end again.
            self.chat_view.show_messages(backend.open_session(key))
        first = self.chat_view.first_position(key)
        if idx is not None and first is not None and idx < first and backend is not None:
            backend.load_older(key)  # answered by _on_bridge_messages_prepended
            return "older"
        row = self.chat_view.row_of_hit(idx, term, key)
        # The whole query when it appears as typed, else the word the index matched.
        find = query if self.chat_view.find_text(query) else term
        self.find_bar.open(find)
        self.find_bar.edit.deselect()
        self.find_bar.edit.clearFocus()
        matches = self.chat_view.matches
        if row in matches:
            self._find_match = self.chat_view.show_match(matches.index(row))
        elif row >= 0:
            self.chat_view.jump_to_row(row)
        self.find_bar.set_count(self._find_match + 1, len(matches))
        return "landed" if idx is not None else ""

    def _on_find_bar_query_changed(self, text: str) -> None:
        total = self.chat_view.find_text(text)
        # A new term starts at the newest match, as the conversation is read from the bottom.
        self._find_match = self.chat_view.show_match(total - 1) if total else -1
        self.find_bar.set_count(self._find_match + 1, total)

    def _on_find_bar_step(self, direction: int) -> None:
        total = len(self.chat_view.matches)
        if total:
            self._find_match = self.chat_view.show_match(self._find_match + direction)
        self.find_bar.set_count(self._find_match + 1, total)

    def _on_find_bar_closed(self) -> None:
        self._pending_hit = None
        self.chat_view.clear_find()
        self._find_match = -1
        self.chat_view.setFocus(Qt.FocusReason.OtherFocusReason)

    def _on_session_list_current_changed(self, current: QModelIndex, _prev: QModelIndex) -> None:
        key = current.data(KEY_ROLE)
        if key and key != self._session_key:
            self.open_session(str(key))

    def _on_composer_send_requested(self, text: str, attachments: tuple[Attachment, ...]) -> None:
        backend = self.backend
        if backend is None:
            return
        key = self._session_key or self._start_chat(backend)
        if not attachments and self.composer.edit.slash.is_command(text):
            backend.run_command(key, text.strip())  # the gateway's command, not a prompt
            return
        backend.send(key, text, attachments)

    def _start_chat(self, backend: ChatBackend) -> str:
        # Typing straight into an empty window starts a chat, as in any messenger.
        draft = self.composer.draft()
        key = backend.create_session()
        self.session_model.set_sessions(backend.sessions())
        self.open_session(key)
        if draft.text or draft.attachments:
            self.composer.load_draft(draft)  # opening the new chat must not drop the text
        return key

    def _on_composer_stop_requested(self) -> None:
        self.stop()

    def _on_composer_draft_changed(self, draft: Draft) -> None:
        backend = self.backend
        if backend is None:
            return
        key = self._session_key
        if key is None:
            if not (draft.text.strip() or draft.attachments):
                return
            # Text typed before any chat exists is a draft too: give it a chat to be saved in.
            key = self._start_chat(backend)
        backend.save_draft(key, draft.text, draft.cursor, draft.attachments)

    def _on_chat_view_action_requested(self, kind: str, message_id: str) -> None:
        backend = self.backend
        if backend is None:
            return
        if kind == "retry":
            backend.retry(message_id)
        elif kind == "discard":
            backend.discard(message_id)
        elif kind == "edit":
            draft = backend.edit_unsent(message_id)
            if draft is not None:
                self.composer.set_draft(draft)
        elif kind == "resend":
            msg = self._message(message_id)
            if msg is not None:
                # Sent messages stay in the history: the edited text goes out as a new prompt.
                text = msg.text
                self.composer.set_draft(Draft(text, len(text), msg.attachments))
        elif kind == "retry_reply" and self._session_key:
            if not backend.retry_reply(self._session_key, message_id):
                self._on_chat_view_action_requested("regenerate", message_id)
        elif kind == "regenerate":
            prompt = self._prompt_before(message_id)
            if prompt is not None and self._session_key:
                # The gateway has no "regenerate": the prompt goes out again as a new submission.
                backend.send(self._session_key, prompt.text, prompt.attachments)

    def _message(self, message_id: str) -> ChatMessage | None:
        row = self.chat_view.chat_model.row_of(message_id)
        return self.chat_view.chat_model.message_at(row) if row is not None else None

    def _prompt_before(self, message_id: str) -> ChatMessage | None:
        """The user prompt a reply answered (the nearest user message above it)."""
        model = self.chat_view.chat_model
        row = model.row_of(message_id)
        for r in range((row if row is not None else 0) - 1, -1, -1):
            msg = model.message_at(r)
            if msg.role is Role.USER:
                return msg
        return None

    def _on_chat_view_code_copied(self, _text: str) -> None:
        self.statusBar().showMessage("Code copied", 2000)

    def _on_chat_view_text_copied(self, _text: str) -> None:
        self.statusBar().showMessage("Copied", 2000)

    def _on_chat_view_quote_requested(self, text: str) -> None:
        self.composer.quote(text)

    def _on_connection_reconnect_requested(self) -> None:
        if self.backend is not None:
            self.backend.reconnect_now()

    def _on_connection_pause_requested(self) -> None:
        if self.backend is not None:
            self.backend.pause()

    def _on_connection_resume_requested(self) -> None:
        if self.backend is not None:
            self.backend.resume()

    def _on_connection_details_requested(self) -> None:
        if self.backend is None:
            return
        self.details.show_diagnostics(self.backend.diagnostics())
        button = self.connection.details_button
        self.details.adjustSize()
        pos = button.mapToGlobal(button.rect().bottomRight())
        self.details.move(pos.x() - self.details.width(), pos.y() + 4)
        self.details.show()

    def _on_tray_show_requested(self) -> None:
        self.bring_forward()

    def _on_tray_chat_requested(self, profile_id: str, key: str) -> None:
        self.switch_profile(profile_id)
        if profile_id == self._profile_id and key:
            self.open_session(key)

    def bring_forward(self) -> None:
        """Show the window in front (from the tray, or when the app is launched again)."""
        if self.isMinimized() or not self.isVisible():
            self.showNormal()
        self.raise_()
        self.activateWindow()

    # -- slots: backend ---------------------------------------------------------------------

    def _current(self, profile_id: str, key: str | None = None) -> bool:
        if profile_id != self._profile_id:
            return False
        return key is None or key == self._session_key

    def _on_bridge_status_changed(self, profile_id: str, status: ConnectionStatus) -> None:
        if self._current(profile_id):
            self.connection.set_status(status)

    def _on_bridge_sessions_changed(self, profile_id: str, sessions: list[SessionSummary]) -> None:
        if not self._current(profile_id):
            return
        self.session_model.set_sessions(sessions)
        if self._session_key is not None:
            self._select_in_list(self._session_key)
            summary = self.session_model.session(self._session_key)
            if summary is not None and summary.title:
                self.title_label.setText(summary.title)
        self._update_unread()

    def _on_bridge_session_key_changed(self, profile_id: str, old_key: str, new_key: str) -> None:
        setting = f"ui/last_session/{profile_id}"
        if self._settings.value(setting, "") == old_key:
            self._settings.setValue(setting, new_key)
        if self._current(profile_id, old_key):
            # Same conversation, new name: keep the view, composer and scroll position as they are.
            self._session_key = new_key
            self._select_in_list(new_key)
            # A new chat only now exists on the gateway: ask what its model is and offers.
            if self.backend is not None:
                self.backend.load_models(new_key)
            self._show_info()

    def _on_bridge_messages_reset(
        self, profile_id: str, key: str, messages: list[ChatMessage]
    ) -> None:
        if self._current(profile_id, key):
            self.chat_view.show_messages(messages)
            if self._pending_hit is not None and self._pending_hit[0] == key:
                self.jump_to_hit(key)  # e.g. the snapshot replaced the cached messages shown

    def _on_bridge_messages_prepended(
        self, profile_id: str, key: str, messages: list[ChatMessage]
    ) -> None:
        if self._current(profile_id, key):
            self.chat_view.prepend_messages(messages)
            if self._pending_hit == (key, True):
                self.jump_to_hit(key)

    def _on_bridge_messages_appended(
        self, profile_id: str, key: str, messages: list[ChatMessage]
    ) -> None:
        if self._current(profile_id, key):
            self.chat_view.append_messages(messages)

    def _on_bridge_messages_dropped(
        self, profile_id: str, key: str, count: int, newest: bool
    ) -> None:
        if self._current(profile_id, key):
            self.chat_view.drop_messages(count, newest)

    def _on_chat_view_older_wanted(self) -> None:
        backend, key = self.backend, self._session_key
        if backend is not None and key is not None:
            backend.load_older(key)

    def _on_bridge_newer_waiting(self, profile_id: str, key: str, replies: int) -> None:
        if self._current(profile_id, key):
            self.chat_view.newer_waiting(replies)

    def _on_bridge_live_end_joined(self, profile_id: str, key: str) -> None:
        if self._current(profile_id, key):
            self.chat_view.live_end_joined()

    def _on_chat_view_live_end_wanted(self) -> None:
        backend, key = self.backend, self._session_key
        if backend is not None and key is not None:
            # Jump to newest far up: the session is shown again from its live end.
            self.chat_view.show_messages(backend.open_session(key))

    def _on_chat_view_newer_wanted(self) -> None:
        backend, key = self.backend, self._session_key
        if backend is not None and key is not None:
            backend.load_newer(key)

    def _on_bridge_message_changed(self, profile_id: str, key: str, message: ChatMessage) -> None:
        if self._current(profile_id, key):
            self.chat_view.update_message(message)

    def _on_bridge_message_removed(self, profile_id: str, key: str, message_id: str) -> None:
        if self._current(profile_id, key):
            self.chat_view.remove_message(message_id)

    def _on_bridge_running_changed(self, profile_id: str, key: str, running: bool) -> None:
        if self._current(profile_id, key):
            self.composer.set_running(running)
        if running:
            return
        title, text = self._finished_reply(profile_id, key)
        self.tray.reply_finished(title, text, profile_id, key)
        if self._current(profile_id, key):
            announce(self.chat_view, f"Reply: {plain_text(text)}" if text else "Reply finished")
        elif profile_id == self._profile_id:
            announce(self.chat_view, f"New reply in {title}")

    def _finished_reply(self, profile_id: str, key: str) -> tuple[str, str]:
        entry = self._profiles.get(profile_id)
        summary = entry.backend.summary(key) if entry is not None else None
        title = summary.title if summary and summary.title else "Reply finished"
        text = summary.preview if summary else ""
        if self._current(profile_id, key):
            model = self.chat_view.chat_model
            for row in range(model.rowCount() - 1, -1, -1):
                msg = model.message_at(row)
                if msg.role is Role.ASSISTANT:
                    text = msg.text
                    break
        return title, text

    def _on_bridge_notice(self, profile_id: str, key: str, text: str) -> None:
        if self._current(profile_id) and key in ("", self._session_key):
            self.notice_label.setText(text)
            self.notice_label.setVisible(bool(text))

    def _on_bridge_draft_restored(self, profile_id: str, key: str, draft: Draft) -> None:
        if self._current(profile_id, key):
            self._draft_announced = True
            self.composer.show_draft_restored(draft)

    def _on_bridge_prompt_restored(
        self, profile_id: str, key: str, draft: Draft, error: str
    ) -> None:
        if self._current(profile_id, key):
            self.composer.restore_prompt(draft, error)

    def _on_bridge_draft_save_state(
        self, profile_id: str, key: str, saved: bool, error: str
    ) -> None:
        if self._current(profile_id, key):
            self.composer.set_save_state(saved, error)

    def _on_bridge_approval_requested(
        self, profile_id: str, key: str, request: ApprovalRequest
    ) -> None:
        if self._current(profile_id, key):
            self._show_approvals()

    def _on_bridge_approval_closed(self, profile_id: str, key: str, request_id: str) -> None:
        if self._current(profile_id, key):
            self._show_approvals()

    def _on_bridge_session_info(self, profile_id: str, key: str, info: SessionInfo) -> None:
        if self._current(profile_id, key):
            self._show_info()

    def _on_bridge_commands_loaded(
        self, profile_id: str, key: str, commands: list[tuple[str, str]]
    ) -> None:
        if profile_id == self._profile_id:
            self.composer.edit.slash.set_commands(commands)

    def _on_bridge_models_loaded(
        self, profile_id: str, key: str, models: list[ModelChoice]
    ) -> None:
        if self._current(profile_id, key):
            self._show_info()

    def _on_model_chosen(self, choice: ModelChoice) -> None:
        backend = self.backend
        if backend is not None and self._session_key is not None:
            backend.set_model(self._session_key, choice)

    def _show_info(self) -> None:
        """Header: the session's model and provider; above the composer: the status line."""
        backend, key = self.backend, self._session_key
        info = backend.session_info(key) if backend is not None and key else SessionInfo()
        model = " · ".join(p for p in (info.model, info.provider) if p)
        self.model_label.setText(model)
        self.model_label.setToolTip(
            f"Model {info.model or 'unknown'}, provider {info.provider or 'unknown'}"
            + (f", approvals: {info.approval_mode}" if info.approval_mode else "")
        )
        self.model_label.setVisible(bool(model))
        models = backend.models(key) if backend is not None and key else []
        self.model_menu.clear()
        for choice in models:
            action = self.model_menu.addAction(f"{choice.model}  ({choice.provider_name})")
            action.setCheckable(True)
            action.setChecked(choice.model == info.model and choice.current)
            action.triggered.connect(lambda _=False, c=choice: self._on_model_chosen(c))
        # No models offered (e.g. the embedded gateway): the name only, no menu.
        # setMenu(None) takes the menu away; PySide6's stubs do not allow None.
        self.model_label.setMenu(self.model_menu if len(models) > 1 else None)  # type: ignore[arg-type]
        self.activity_label.setText(info.activity)
        self.activity_label.setVisible(bool(info.activity))
        context, context_tip = context_text(info)
        self.context_label.setText(context)
        self.context_label.set_tip(context_tip)
        self.context_label.setVisible(bool(context))
        todos, todo_tip = todo_text(info.todos)
        self.todo_label.setText(todos)
        self.todo_label.set_tip(todo_tip)
        self.todo_label.setAccessibleDescription(todo_tip)
        self.todo_label.setVisible(bool(todos))

    def _show_approvals(self) -> None:
        """Cards follow the pending requests of the viewed session; a new one takes focus."""
        backend, key = self.backend, self._session_key
        requests = backend.pending_requests(key) if backend is not None and key else []
        pending = {request.request_id: request for request in requests}
        kept: set[str] = set()
        for card in self.approvals.findChildren(ApprovalCard):
            if pending.get(card.request.request_id) == card.request:
                kept.add(card.request.request_id)  # a half-typed answer stays where it is
                continue
            card.setParent(None)
            card.deleteLater()
        added: ApprovalCard | None = None
        for request in pending.values():
            if request.request_id in kept:
                continue
            added = ApprovalCard(request, self.approvals)
            added.answered.connect(self._on_card_answered)
            self.approvals_layout.addWidget(added)
        self.approvals.setVisible(bool(pending))
        if added is not None:
            added.focus_first()  # keyboard first: no Tab hunt to reach the question

    def _on_card_answered(self, request_id: str, answer: object) -> None:
        backend = self.backend
        key = self._session_key
        if backend is None or key is None:
            return
        assert isinstance(answer, bool | str | dict)
        backend.respond(key, request_id, answer)  # core drops the request: its card goes
        card = self.sender()
        had_focus = isinstance(card, ApprovalCard) and card.answered_with_focus
        self._show_approvals()
        if had_focus and not self.approvals.isVisible():
            self.composer.edit.setFocus()  # the last card answered: back to typing

    def _update_unread(self) -> None:
        total = sum(entry.backend.unread() for entry in self._profiles.values())
        self.tray.set_unread(total)
        self.setWindowTitle(f"Hermes ({total})" if total else "Hermes")
