"""A chat in a window of its own: the whole chat pane (header, messages, requests, composer) of
one chat of any profile, live beside the main window.

It listens to its profile's backend through a bridge of its own, so the chat's events reach it
whatever the main window shows. The windows open at the next start are opened again
(`PopOuts.restore`); a chat that is gone is left out.
"""

from __future__ import annotations

import json

from PySide6.QtCore import QByteArray, QObject, QSettings, Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import QMainWindow

from desktop.core.models import ChatMessage, Role, SessionInfo, SessionSummary
from desktop.ui.backend import ChatBackend, Draft
from desktop.ui.platform.resources import icon
from desktop.ui.render.markdown import title_text
from desktop.ui.shortcuts import SHORTCUTS, key_sequences
from desktop.ui.theme import Colors
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.finder import ChatFinder
from desktop.ui.window.intents import ChatIntents
from desktop.ui.window.pane.chat_pane import ChatPane
from desktop.ui.window.pane.details import DetailsDialog
from desktop.ui.window.profile_view import screen_wiring, show_status

_WINDOWS = "ui/chat_windows"


class ChatWindow(QMainWindow):
    """One chat's own window.

    Signals:
        closed(object): this window, closed by the user.
    """

    closed = Signal(object)

    def __init__(
        self, backend: ChatBackend, profile: str, key: str, *, at_start: bool = False
    ) -> None:
        super().__init__()
        self.setWindowIcon(icon("app"))
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, True)
        self.profile = profile
        self.bridge = ProfileBridge(backend, self)  # a listener of its own: always live
        self.pane = pane = ChatPane(self, at_start=at_start)  # (see ChatView)
        pane.header.sidebar_button.hide()  # no chat list here
        self.setCentralWidget(pane)
        self.chat_view = pane.chat_view
        self.composer = pane.composer
        self.connection = pane.header.connection
        self.approvals = pane.approvals
        self.details = DetailsDialog(self)
        self.intents = ChatIntents(
            self,
            view=self.chat_view,
            composer=self.composer,
            header=pane.header,
            approvals=self.approvals,
            details=self.details,
            queued=pane.queued_rows,
            popups=self,
        )
        for signal, slot in screen_wiring(self.bridge, self):
            signal.connect(slot)
        self.find_bar = pane.find_bar
        self.finder = ChatFinder(pane.find_bar, self.chat_view, None)
        self.prompt_search = self.intents.prompt_search
        # Ctrl+F and Ctrl+R as in the main window's chat pane (the same keys, the same bar).
        keys = {"search": self.finder.open, "search_prompts": self.intents.search_prompts}
        for sc in SHORTCUTS:
            if sc.action in keys:
                action = QAction(sc.description, self)
                action.setShortcuts(key_sequences(sc))
                action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
                action.triggered.connect(keys[sc.action])
                self.addAction(action)
        close = QShortcut(QKeySequence("Ctrl+W"), self)
        close.activated.connect(self.close)
        self.resize(640, 640)
        self.setMinimumSize(420, 360)
        self._open(key)

    @property
    def backend(self) -> ChatBackend:
        return self.bridge.backend

    @property
    def profile_id(self) -> str:
        return self.bridge.profile_id

    @property
    def session_key(self) -> str | None:
        return self.bridge.viewed_key

    def _open(self, key: str) -> None:
        backend = self.backend
        self.bridge.view(key)
        self.chat_view.show_messages(backend.open_session(key))
        self.composer.load_draft(backend.load_draft(key))
        summary = backend.summary(key)
        self.composer.set_running(bool(summary and summary.running))
        self.composer.set_commands(backend.commands())
        show_status(self, backend.status())
        backend.load_commands(key)
        backend.load_models(key)
        self._show_title(summary)
        self.show_info()
        self.show_approvals()
        self.show_queue()

    def _show_title(self, summary: SessionSummary | None) -> None:
        title = title_text(summary.title) if summary and summary.title else "New chat"
        self.pane.header.set_title(title)
        self.setWindowTitle(f"{' '.join(title.split())} — {self.profile}")

    def set_colors(self, colors: Colors) -> None:
        self.chat_view.set_colors(colors)
        self.composer.attach_button.setIcon(icon("attach", colors.icon_tint))

    # -- Screen (what its bridge tells) and OpenChat (what its intents ask) ---------------------

    def show_sessions(self, _sessions: list[SessionSummary]) -> None:
        if self.session_key is not None:
            self._show_title(self.backend.summary(self.session_key))

    def update_unread(self) -> None:
        pass  # the main window counts every profile's unread replies

    def show_history(self, messages: list[ChatMessage]) -> None:
        self.chat_view.show_messages(messages)
        if self.session_key is not None:
            self.finder.history_reset(self.backend, self.session_key)

    def show_older(self, messages: list[ChatMessage]) -> None:
        self.chat_view.prepend_messages(messages)
        if self.session_key is not None:
            self.finder.older_arrived(self.backend, self.session_key)

    def show_draft_restored(self, draft: Draft) -> None:
        self.composer.show_draft_restored(draft)

    def show_notice(self, text: str) -> None:
        self.pane.show_notice(text)

    def show_info(self) -> None:
        key = self.session_key
        info = self.backend.session_info(key) if key else SessionInfo()
        self.pane.header.show_info(info, self.backend.models(key) if key else [])
        self.pane.show_status_lines(info)

    def show_approvals(self) -> None:
        key = self.session_key
        self.approvals.show_requests(self.backend.pending_requests(key) if key else [])

    def follow_session_key(self, key: str) -> None:
        self.backend.load_models(key)
        self.show_info()

    def show_queue(self, *_changed: object) -> None:
        self.intents.show_queue()

    def queue_message_changed(self, message: ChatMessage) -> None:
        if not (message.role is Role.ASSISTANT and message.streaming):
            self.intents.show_queue()

    def create_chat(self) -> str | None:
        return self.session_key

    def show_status(self, text: str, ms: int) -> None:
        self.pane.toast.show_message(text, ms)

    def closeEvent(self, e: QCloseEvent) -> None:
        self.composer.draft_changed.emit(self.composer.draft())  # the draft as it is now
        self.bridge.detach()
        self.closed.emit(self)
        super().closeEvent(e)


class PopOuts(QObject):
    """The chat windows open now, remembered in the settings for the next start."""

    def __init__(self, settings: QSettings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._settings = settings
        self._backends: dict[str, tuple[str, ChatBackend]] = {}
        self._colors: Colors | None = None
        self._closing_all = False
        self.windows: list[ChatWindow] = []

    def add_profile(self, name: str, backend: ChatBackend) -> None:
        self._backends[backend.profile_id] = (name, backend)

    def remove_profile(self, profile_id: str) -> None:
        self._backends.pop(profile_id, None)
        for window in [w for w in self.windows if w.profile_id == profile_id]:
            window.close()

    def set_colors(self, colors: Colors) -> None:
        self._colors = colors
        for window in self.windows:
            window.set_colors(colors)

    def find(self, profile_id: str, key: str) -> ChatWindow | None:
        return next(
            (w for w in self.windows if (w.profile_id, w.session_key) == (profile_id, key)),
            None,
        )

    def bring_forward(self, profile_id: str, key: str) -> bool:
        """The window of chat `key`, in front; whether there is one."""
        window = self.find(profile_id, key)
        if window is None:
            return False
        if window.isMinimized():
            window.showNormal()
        window.raise_()
        window.activateWindow()
        return True

    def open(
        self,
        profile_id: str,
        key: str,
        geometry: QByteArray | None = None,
        *,
        at_start: bool = False,
    ) -> ChatWindow | None:
        """Chat `key` of `profile_id` in its own window (brought forward if it has one); the
        window, None when there is no such chat. `at_start`: as the app starts (see
        ChatView)."""
        window = self.find(profile_id, key)
        if window is None:
            entry = self._backends.get(profile_id)
            if entry is None or entry[1].summary(key) is None:
                return None
            window = ChatWindow(entry[1], entry[0], key, at_start=at_start)
            if self._colors is not None:
                window.set_colors(self._colors)
            if geometry is not None:
                window.restoreGeometry(geometry)
            window.closed.connect(self._on_window_closed)
            window.bridge.session_key_changed.connect(lambda *_: self.save())
            self.windows.append(window)
            window.show()
        window.raise_()
        window.activateWindow()
        self.save()
        return window

    def save(self) -> None:
        if self._closing_all:
            return
        saved = [
            [w.profile_id, w.session_key, bytes(w.saveGeometry().toBase64().data()).decode()]
            for w in self.windows
            if w.session_key
        ]
        self._settings.setValue(_WINDOWS, json.dumps(saved))

    def restore(self, *, at_start: bool = False) -> None:
        """The chat windows of the last run, less chats that are gone."""
        try:
            saved = json.loads(str(self._settings.value(_WINDOWS, "") or "[]"))
        except ValueError:
            return
        for item in saved if isinstance(saved, list) else []:
            if isinstance(item, list) and len(item) == 3:
                geometry = QByteArray.fromBase64(str(item[2]).encode())
                self.open(str(item[0]), str(item[1]), geometry, at_start=at_start)

    def close_all(self) -> None:
        """The app closes: every window goes, and is opened again at the next start."""
        self.save()
        self._closing_all = True
        try:
            for window in list(self.windows):
                window.close()
        finally:
            self._closing_all = False

    def _on_window_closed(self, window: ChatWindow) -> None:
        if window in self.windows:
            self.windows.remove(window)
        self.save()
