"""The main window: lays out the sidebar, header and chat, and wires them to the shown profile.

What a profile says reaches the widgets through its ProfileView (profile_view.py), connected
only while that profile is shown; the bridges and the tray come built from desktop/app.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDragMoveEvent, QDropEvent, QResizeEvent
from PySide6.QtWidgets import QListView, QMainWindow

from desktop.core.models import ChatMessage, Role, SessionInfo, SessionSummary
from desktop.ui.agent.work_intents import WorkIntents
from desktop.ui.backend import ChatBackend, Draft
from desktop.ui.chat.view import ChatView
from desktop.ui.chat.zoom import Zoom
from desktop.ui.compose.busy_choice import BusyChoice
from desktop.ui.platform.first_paint import AfterFirstPaint
from desktop.ui.platform.folders import Folders
from desktop.ui.platform.refocus import RefocusAfterDialogs
from desktop.ui.platform.resources import icon
from desktop.ui.platform.tray import Tray
from desktop.ui.sessions.switcher import SessionSwitcher
from desktop.ui.settings.values import AppSettings, SettingsChecks
from desktop.ui.shortcuts import ShortcutsDialog
from desktop.ui.theme import Colors
from desktop.ui.window.actions import build_actions
from desktop.ui.window.bridge import ProfileEntry
from desktop.ui.window.chat_admin import ChatAdmin, Dialogs
from desktop.ui.window.finder import ChatFinder
from desktop.ui.window.intents import ChatIntents
from desktop.ui.window.pane.chat_pane import ChatPane
from desktop.ui.window.pane.details import DetailsDialog
from desktop.ui.window.placement import Placement
from desktop.ui.window.popout import PopOuts
from desktop.ui.window.profile_view import ProfileView, show_status
from desktop.ui.window.sidebar import Sidebar
from desktop.ui.window.tabs import ChatTabs, chat_column

__all__ = ["MainWindow", "ProfileEntry"]


class MainWindow(QMainWindow):
    """Composes the widgets; events of a profile other than the shown one never reach them.

    Signals:
        settings_saved(object): AppSettings the user saved in the settings dialog.
        quit_requested(): the user chose Quit (Ctrl+Q or the tray menu).
    """

    settings_saved = Signal(object)
    quit_requested = Signal()

    def __init__(
        self,
        profiles: Sequence[ProfileEntry],
        settings: QSettings,
        *,
        tray: Tray,
        app_settings: Callable[[], AppSettings] = AppSettings,
        checks: SettingsChecks | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        at_start: bool = False,
    ) -> None:
        super().__init__()
        self._at_start = at_start  # the app's window as it starts (see ChatView)
        self.setWindowTitle("Hermes")
        self.setWindowIcon(icon("app"))
        self.setAccessibleName("Hermes chat")
        self._settings = settings
        self._app_settings = app_settings
        self._checks = checks  # run by Settings' Test buttons
        self._views: dict[str, ProfileView] = {}
        self._shown: ProfileView | None = None
        self._draft_announced = False
        self._close_to_tray = False
        self._quitting = False
        self._build(monotonic, wall)
        self.actions_by_name = build_actions(
            self, self.session_list, self._action_handlers(), {"go_to_tab": self.tabs.go_to}
        )
        self.actions_by_name.update(self.chat_view.actions_by_name)
        self.tray = tray
        tray.setParent(self)
        tray.show_requested.connect(self.bring_forward)
        tray.quit_requested.connect(self.quit)
        tray.chat_requested.connect(self._on_tray_chat_requested)
        for entry in profiles:
            self._attach(entry)
        self._restore_state()
        self._refocus = RefocusAfterDialogs(self)  # no window manager: shortcuts after dialogs
        # What waits until the user sees the window (desktop/app adds its own).
        self.after_paint = AfterFirstPaint(self)
        self.after_paint.call(self._list_every_chat)
        self.after_paint.call(self._renders_final)

    # -- construction -----------------------------------------------------------------------

    def _build(self, monotonic: Callable[[], float], wall: Callable[[], float]) -> None:
        self.sidebar = side = Sidebar(self, wall=wall)
        side.profile_chosen.connect(self.switch_profile)
        side.new_chat_button.clicked.connect(self.new_chat)
        side.settings_button.clicked.connect(self.open_settings)
        side.search_box.textChanged.connect(self._on_search_box_text_changed)
        side.session_selected.connect(self._on_sidebar_session_selected)
        side.session_activated.connect(self._on_sidebar_session_activated)
        side.search_entered.connect(
            lambda: self.chat_view.setFocus(Qt.FocusReason.ShortcutFocusReason)
        )
        # The sidebar's widgets by the names users (and tests) know them by.
        self.profile_combo = side.profile_combo
        self.search_box = side.search_box
        self.session_list: QListView = side.session_list
        self.session_model = side.session_model
        self.session_filter = side.session_filter

        self.pane = pane = ChatPane(self, at_start=self._at_start, monotonic=monotonic, wall=wall)
        # The pane's widgets by the names users (and tests) know them by.
        self.header = pane.header
        self.title_label = pane.header.title_label
        self.model_label = pane.header.model_label
        self.context_label = pane.header.context_label
        self.connection = pane.header.connection
        self.notice_label = pane.notice_label
        self.find_bar = pane.find_bar
        self.chat_view: ChatView = pane.chat_view
        self.activity_label = pane.activity_label
        self.todo_list = pane.todo_list
        self.work_panel = pane.work_panel
        self.approvals = pane.approvals
        self.composer = pane.composer
        self.queued_rows = pane.queued_rows
        self.finder = ChatFinder(self.find_bar, self.chat_view, side)
        self.tabs = ChatTabs(self, self._settings, self)
        self.popouts = PopOuts(self._settings, self)
        self.tabs.raise_window = self.popouts.bring_forward

        column = chat_column(self, self.tabs, pane)
        self.placement = Placement(
            self, side, pane, self._settings, self.focus_composer, column=column
        )
        self.splitter = self.placement.splitter
        self.switcher = SessionSwitcher(self.session_model, self)
        self.switcher.session_chosen.connect(self.open_session)
        self.details = DetailsDialog(self)
        self.intents = ChatIntents(
            self,
            view=self.chat_view,
            composer=self.composer,
            header=self.header,
            approvals=self.approvals,
            details=self.details,
            queued=self.queued_rows,
            popups=self,
        )
        self.work_intents = WorkIntents(self, pane.work_panel)
        self.busy_choice = BusyChoice(self, self.composer, self._settings)
        self.intents.chat_wanted.connect(self.open_session)  # a branch made here
        self.prompt_history = self.intents.prompt_history
        self.prompt_search = self.intents.prompt_search
        self.folders = Folders(self._settings)  # where file dialogs open, remembered
        self.composer.folders = self.folders
        self.chat_admin = ChatAdmin(self, self, side, self.folders)
        # Text size of the conversation and the message box (Ctrl+= / Ctrl+- / Ctrl+0).
        self.zoom = Zoom(self._settings, self.font().pointSizeF(), self)
        self.zoom.apply_to(self.chat_view, self.composer)
        self.placement.set_tab_order([*side.focus_chain(), *pane.focus_chain()])
        side.setMinimumWidth(200)
        self.header.sidebar_button.clicked.connect(self.placement.toggle_sidebar)
        self.resize(1040, 700)
        self.setMinimumSize(420, 360)  # below, the header and composer have no room
        self.setAcceptDrops(True)

    def search_prompts(self) -> None:
        """Ctrl+R: search the prompts of every chat; the one chosen goes in the message box."""
        self.intents.search_prompts()

    def _action_handlers(self) -> dict[str, Callable[[], None]]:
        return {
            "new_chat": self.new_chat,
            "switch_session": self.switcher.popup,
            "focus_composer": self.focus_composer,
            "search": self.find_in_chat,
            "search_chats": self.sidebar.focus_search,
            "search_prompts": self.search_prompts,
            "stop": self.intents.stop,
            "settings": self.open_settings,
            "shortcuts": self.show_shortcuts,
            "quit": self.quit,
            "toggle_sidebar": self.placement.toggle_sidebar,
            "zoom_in": self.zoom.zoom_in,
            "zoom_out": self.zoom.zoom_out,
            "zoom_reset": self.zoom.reset,
            "export_session": self.chat_admin.export_open,
            "rename_session": self.chat_admin.rename_selected,
            "delete_session": self.chat_admin.delete_selected,
            "pin_session": self.chat_admin.pin_selected,
            "archive_session": self.chat_admin.archive_selected,
            "open_in_tab": lambda: self.tabs.open_listed_in_new_tab(
                self.profile_id, self.sidebar.selected_key()
            ),
            "open_in_window": self.pop_out_selected,
            **self.tabs.handlers(),
        }

    # -- profiles ---------------------------------------------------------------------------

    def _attach(self, entry: ProfileEntry) -> None:
        view = ProfileView(entry, self, self._settings, self.tray)
        self._views[view.profile_id] = view
        self.sidebar.add_profile(view.profile_id, entry.name)
        self.tabs.add_profile(entry.name, entry.bridge)
        self.popouts.add_profile(entry.name, entry.backend)

    def _list_every_chat(self) -> None:
        """The lists shown at start hold each profile's newest chats: now every chat (~0.1 s
        for 10,000, which would have kept the window from showing that much longer)."""
        for view in self._views.values():
            view.backend.load_all_sessions()
            # Listed now, not after the news's 16 ms: the next callback would hold it longer.
            view.bridge.flush_chrome()

    def _renders_final(self) -> None:
        """The first paint did not wait for linkify's patterns or the shown code's lexers
        (`at_start`, see ChatView): loaded now if a render wanted them, before a reply can
        stream (a slice at a time in idle time, or later, they fell in its frames: ~35 ms each
        at once; the run on a4f9cc4 under load: one ~100 ms stall); final renders from here,
        in this window and in the chat windows restored with it."""
        for view in (self.chat_view, *(w.chat_view for w in self.popouts.windows)):
            view.bubbles.finish_provisional()

    def add_profile(self, entry: ProfileEntry) -> None:
        """A profile was added in Settings: list it (and show it if it is the only one)."""
        self._attach(entry)
        self.after_paint.call(entry.backend.load_all_sessions)
        if self._shown is None:
            self.switch_profile(entry.bridge.profile_id)

    def rename_profile(self, profile_id: str, name: str) -> None:
        """Show a profile under its new name."""
        self.sidebar.rename_profile(profile_id, name)
        self.tabs.rename_profile(profile_id, name)

    def remove_profile(self, profile_id: str) -> None:
        """A profile was removed: nothing of it is shown or heard from again."""
        view = self._views.pop(profile_id, None)
        if view is None:
            return
        view.hide()
        view.bridge.detach()
        view.deleteLater()
        self.sidebar.remove_profile(profile_id)
        self.tabs.remove_profile(profile_id)
        self.popouts.remove_profile(profile_id)
        if self._shown is view:
            self._shown = None
            first = self.sidebar.first_profile()
            if first:
                self.switch_profile(first)

    @property
    def profile_id(self) -> str:
        """The profile being shown."""
        return self._shown.profile_id if self._shown is not None else ""

    @property
    def session_key(self) -> str | None:
        """The open session, if any."""
        return self._shown.session_key if self._shown is not None else None

    @property
    def backend(self) -> ChatBackend | None:
        return self._shown.backend if self._shown is not None else None

    @property
    def close_to_tray(self) -> bool:
        """Whether closing the window hides it to the tray (when there is one)."""
        return self._close_to_tray

    def set_close_to_tray(self, enabled: bool) -> None:
        self._close_to_tray = enabled

    def set_colors(self, colors: Colors) -> None:
        """Apply theme colours to custom-painted widgets."""
        self.chat_view.set_colors(colors)
        self.sidebar.set_icon_tint(colors.icon_tint)
        self.composer.attach_button.setIcon(icon("attach", colors.icon_tint))
        self.tabs.set_colors(colors.accent, colors.warning, colors.icon_tint)
        self.popouts.set_colors(colors)

    def set_send_key(self, send_key: str) -> None:
        """Enter or Ctrl+Enter sends."""
        self.composer.set_send_key(send_key)

    def switch_profile(self, profile_id: str, *, open_last: bool = True) -> None:
        """Show another profile: its sessions, status and (`open_last`) last open session."""
        view = self._views.get(profile_id)
        if view is None or view is self._shown:
            return
        if self._shown is not None:
            self._shown.hide()
        self._shown = view
        view.show()
        self.sidebar.show_profile(profile_id)
        self._settings.setValue("ui/last_profile", profile_id)
        backend = view.backend
        self.chat_view.show_messages([])
        self.composer.load_draft(None)
        self.composer.set_running(False)
        self.notice_label.hide()
        self.show_approvals()
        self.show_queue()
        show_status(self, backend.status())
        # A tab of the profile shows again; else the chat open when it was last shown.
        last = (self.tabs.first_of(profile_id) or view.last_session) if open_last else ""
        if last:
            # Listed wherever it is: at a start the list holds the newest chats until the
            # window is painted (then every one, `_list_every_chat`).
            backend.summary(last)
        self.sidebar.set_sessions(backend.sessions())
        self.update_unread()
        if last and self.sidebar.has_session(last):
            self.open_session(last)
        else:
            self.header.set_title("")
            if open_last:  # chosen, with no chat: the current tab says so
                self.tabs.show_nothing(profile_id)

    def open_session(self, key: str) -> None:
        """Open a session of the current profile; one open in a window of its own is not
        opened a second time: that window comes forward (one message box per chat)."""
        view = self._shown
        if view is None:
            return
        if self.popouts.bring_forward(view.profile_id, key):
            self._keep_list_on_open_chat()
            return
        backend = view.backend
        self.chat_admin.leave(key, self.composer.draft())
        self.finder.reset()
        view.open(key)  # from here on its events reach the widgets
        self.chat_view.show_messages(backend.open_session(key))
        summary = self.sidebar.session(key)
        self.header.set_title(summary.title if summary and summary.title else "New chat")
        # A draft left by the previous run is announced (on_draft_restored) while loading it;
        # the announcement shows it with its notice, so only a plain draft is loaded here.
        self._draft_announced = False
        self.composer.load_draft(None)
        draft = backend.load_draft(key)
        if not self._draft_announced:
            self.composer.load_draft(draft)
        self.composer.set_running(bool(summary and summary.running))
        self.composer.set_commands(backend.commands())
        backend.load_commands(key)  # asked of the gateway once per profile
        backend.load_models(key)
        self.show_info()
        self.notice_label.hide()
        self.show_approvals()
        self.show_queue()
        self.sidebar.select(key)
        self.tabs.show_chat(view.profile_id, key)

    def pop_out_selected(self) -> None:
        """Open in new window (the chat list's menu, Ctrl+Shift+Enter): the chat in a window
        of its own, live beside this one."""
        key = self.sidebar.selected_key()
        if key is None or self._shown is None:
            return
        self.open_in_window(self._shown.profile_id, key)

    def open_in_window(self, profile_id: str, key: str) -> None:
        """Chat `key` moves to a window of its own: out of its tab (the tab closes, or shows
        the chat it showed before), its draft, quote and cursor with it, into the window's
        message box; a chat in a window already brings that window forward."""
        if (self.profile_id, self.session_key) == (profile_id, key):
            # The message box as it is now (a cursor moved since the last keystroke too).
            self.composer.draft_changed.emit(self.composer.draft())
        self.tabs.hand_over(profile_id, key)
        window = self.popouts.open(profile_id, key)
        if window is not None:
            window.composer.focus_edit(Qt.FocusReason.OtherFocusReason)

    def _keep_list_on_open_chat(self) -> None:
        """The list marks the chat this window shows again (another row was chosen)."""
        if self.session_key is not None:
            self.sidebar.select(self.session_key)

    def open_chat(self, profile_id: str, key: str) -> None:
        """Open chat `key` of any profile (a tab, the running strip)."""
        if profile_id != self.profile_id:
            self.switch_profile(profile_id, open_last=False)
        if profile_id == self.profile_id and key != self.session_key:
            self.open_session(key)

    # -- what the shown profile says (called by its ProfileView) ------------------------------

    def show_sessions(self, sessions: list[SessionSummary]) -> None:
        self.sidebar.set_sessions(sessions)
        key = self.session_key
        if key is not None:
            self.sidebar.select(key)
            summary = self.sidebar.session(key)
            if summary is not None and summary.title:
                self.header.set_title(summary.title)

    def follow_session_key(self, key: str) -> None:
        """The open chat got its durable key: same conversation, so the view, composer and
        scroll position stay as they are."""
        self.sidebar.select(key)
        # A new chat only now exists on the gateway: ask what its model is and offers.
        if self.backend is not None:
            self.backend.load_models(key)
        self.show_info()

    def update_unread(self) -> None:
        total = sum(view.backend.unread() for view in self._views.values())
        self.tray.set_unread(total)
        self.setWindowTitle(f"Hermes ({total})" if total else "Hermes")

    def show_history(self, messages: list[ChatMessage]) -> None:
        self.chat_view.show_messages(messages)
        if self._shown is not None and self.session_key is not None:
            self.tabs.history_shown(self._shown.profile_id, self.session_key)
            self.finder.history_reset(self._shown.backend, self.session_key)

    def show_older(self, messages: list[ChatMessage]) -> None:
        self.chat_view.prepend_messages(messages)
        if self._shown is not None and self.session_key is not None:
            self.finder.older_arrived(self._shown.backend, self.session_key)

    def show_draft_restored(self, draft: Draft) -> None:
        self._draft_announced = True
        self.composer.show_draft_restored(draft)

    def show_notice(self, text: str) -> None:
        self.pane.show_notice(text)

    def show_info(self) -> None:
        """Header: the session's model and provider; above the composer: the status lines."""
        backend, key = self.backend, self.session_key
        info = backend.session_info(key) if backend is not None and key else SessionInfo()
        self.header.show_info(info, backend.models(key) if backend is not None and key else [])
        self.work_intents.show_support()
        self.pane.show_status_lines(info)

    def show_queue(self, *_changed: object) -> None:
        """Above the composer: the open chat's follow-ups waiting behind its reply, and what
        Enter does meanwhile."""
        self.intents.show_queue()
        self.busy_choice.refresh()

    def queue_message_changed(self, message: ChatMessage) -> None:
        """A message of the open chat changed: the queued rows follow its prompts, and a
        reply's delta changes none of them (it would read the outbox from the store and
        redo the rows on every delta of a streaming reply). A reply's end is still heard."""
        if message.role is Role.ASSISTANT and message.streaming:
            return
        self.intents.show_queue()

    def show_approvals(self) -> None:
        """Cards follow the pending requests of the viewed session."""
        backend, key = self.backend, self.session_key
        self.approvals.show_requests(backend.pending_requests(key) if backend and key else [])

    # -- intents ----------------------------------------------------------------------------

    def new_chat(self) -> None:
        """Create and open a new session."""
        if self.create_chat() is not None:
            self.focus_composer()

    def create_chat(self) -> str | None:
        """Open an empty new chat (reused if there is one); its key (None: no profile)."""
        return self.chat_admin.create_chat()

    def close_chat(self) -> None:
        """The open chat was deleted: its tab closes (the next tab's chat opens), or no chat
        shows."""
        if self.tabs.bar.currentIndex() >= 0:
            self.tabs.chat_closed()
        else:
            self.show_no_chat()

    def show_no_chat(self) -> None:
        """Show no chat (the last tab closed)."""
        if self._shown is not None:
            self._shown.open(None)
        self.chat_view.show_messages([])
        self.composer.load_draft(None)
        self.header.set_title("")
        self.show_queue()

    def show_status(self, text: str, ms: int) -> None:
        """A passing message over the chat's bottom edge (the layout does not move)."""
        self.pane.toast.show_message(text, ms)

    def status_message(self) -> str:
        """The passing message showing now ("" when none)."""
        return self.pane.toast.message()

    def focus_composer(self) -> None:
        self.composer.focus_edit(Qt.FocusReason.ShortcutFocusReason)

    def find_in_chat(self) -> None:
        """Ctrl+F: find in the open chat; with no chat open, search all chats."""
        if self.session_key is None:
            self.sidebar.focus_search()
        else:
            self.finder.open()

    def jump_to_hit(self, key: str) -> None:
        """Show the search hit of the open session `key` (see ChatFinder)."""
        if self.backend is not None and key == self.session_key:
            self.finder.jump_to_hit(self.backend, key)

    def bring_forward(self) -> None:
        """Show the window in front (from the tray, or when the app is launched again)."""
        if self.isMinimized() or not self.isVisible():
            self.showNormal()
        self.raise_()
        self.activateWindow()

    def open_settings(self) -> None:
        from desktop.ui.settings.dialog import SettingsDialog  # built on demand: off start-up

        dialog = SettingsDialog(
            self._app_settings(), self.settings_saved.emit, self, checks=self._checks
        )
        Dialogs.run(dialog)
        dialog.deleteLater()

    def resizeEvent(self, e: QResizeEvent) -> None:
        super().resizeEvent(e)
        self.placement.fit_sidebar()

    def show_shortcuts(self) -> None:
        dialog = ShortcutsDialog(self)
        Dialogs.run(dialog)
        dialog.deleteLater()

    # -- persistence and window events ------------------------------------------------------

    def _restore_state(self) -> None:
        self.placement.restore()
        if not self.tabs.restore():
            last = str(self._settings.value("ui/last_profile", "") or "")
            target = last if last in self._views else self.sidebar.first_profile()
            if target:
                self.switch_profile(target)
        self.popouts.restore(at_start=self._at_start)
        for window in list(self.popouts.windows):
            if window.session_key is not None:  # in its window only, not in a tab as well
                self.tabs.hand_over(window.profile_id, window.session_key)

    def save_state(self) -> None:
        """Remember geometry and splitter sizes, and where each tab's chat is being read."""
        self.placement.save()
        self.tabs.save_places()

    def dragEnterEvent(self, e: QDragEnterEvent) -> None:
        # Files and images dropped anywhere on the window (chat, list, header) are attached.
        if self.pane.droppable(e.mimeData()):
            e.acceptProposedAction()

    def dragMoveEvent(self, e: QDragMoveEvent) -> None:
        if self.pane.droppable(e.mimeData()):
            e.acceptProposedAction()

    def dropEvent(self, e: QDropEvent) -> None:
        if self.pane.attach_dropped(e.mimeData()):
            e.acceptProposedAction()
            self.focus_composer()

    def quit(self) -> None:
        """Ctrl+Q: close for good (not to the tray), as closing does, then quit the app."""
        self._quitting = True
        self.composer.draft_changed.emit(self.composer.draft())  # the draft as it is now
        self.close()
        self.quit_requested.emit()

    def closeEvent(self, e: QCloseEvent) -> None:
        self.save_state()
        if self._close_to_tray and self.tray.can_hide_to_tray and not self._quitting:
            e.ignore()
            self.hide()
            return
        # Closed for good: a delete still undoable goes through; then no backend callback
        # reaches a closed window while the app shuts down.
        self.chat_admin.undo.commit()
        self.popouts.close_all()
        for view in self._views.values():
            view.bridge.detach()
        super().closeEvent(e)

    # -- slots: widgets ---------------------------------------------------------------------

    def _on_tray_chat_requested(self, profile_id: str, key: str) -> None:
        # The notified chat: its own window, its tab, or a new tab (no tab loses its chat).
        if key and profile_id in self._views:
            self.tabs.open_in_tab(profile_id, key)
        else:
            self.switch_profile(profile_id)

    def _on_search_box_text_changed(self, text: str) -> None:
        backend = self.backend
        hits = backend.search_hits(text) if backend is not None and text.strip() else []
        self.sidebar.show_hits(text, hits)

    def _on_sidebar_session_selected(self, key: str) -> None:
        window = self.popouts.find(self.profile_id, key)
        if window is not None:
            # In a window of its own: it comes up, the keyboard stays in the list (arrowing
            # past it); Enter or a click goes there (activated).
            window.raise_()
            return
        if key != self.session_key:
            self.open_session(key)

    def _on_sidebar_session_activated(self, key: str) -> None:
        window = self.popouts.find(self.profile_id, key)
        if window is not None:
            self.popouts.bring_forward(self.profile_id, key)
            self._keep_list_on_open_chat()
            # A search hit in it is shown there (the window's own find bar on its terms).
            window.finder.jump_to_hit(window.backend, key, self.sidebar)
            return
        if key != self.session_key:
            self.open_session(key)
        self.jump_to_hit(key)
