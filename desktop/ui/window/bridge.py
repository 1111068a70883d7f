"""One profile's backend as Qt signals: profile-wide events, and the viewed session's events."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, QTimer, Signal, SignalInstance

from desktop.core.listeners import BackendListener
from desktop.core.models import (
    ChatMessage,
    ConnectionStatus,
    ModelChoice,
    SessionInfo,
    SessionSummary,
)
from desktop.ui.backend import ApprovalRequest, ChatBackend, Draft

_BRIDGES = itertools.count(1)


# How long the chrome follows the chat (one frame at 60 Hz).
CHROME_MS = 16


class ProfileBridge(QObject, BackendListener):
    """Listens to one backend; re-emits its callbacks as signals of this profile.

    A session's events reach the session signals only while that session is the viewed one
    (`view`), decided in one place on the GUI thread: a backend calling from another thread
    is queued there by Qt first, so a late event of a session the user has left is dropped.
    The backend is told what each bridge views (one bridge per window: the main window's, or
    a chat window's), so a chat on screen in any window gathers no unread marks.

    Signals (every session, or the profile as a whole):
        status_changed(object): ConnectionStatus.
        sessions_changed(list): list of SessionSummary.
        session_key_changed(str, str): old (local) key, new (durable) key.
        running_changed(str, bool): session key, running (any session: the tray's news).
        requests_changed(str): session key whose pending requests changed (any session).
        commands_loaded(list): the gateway's slash commands, [(name, description)].
        notice(str): a profile-wide notice, or one of the viewed session ("" hides it).

    Signals (the viewed session only):
        viewed_key_changed(str): the viewed session got its durable key.
        messages_reset(list): all its ChatMessages.
        messages_prepended(list): older ChatMessages.
        messages_appended(list): newer ChatMessages.
        messages_dropped(int, bool): count, newest.
        newer_waiting(int): replies at the hidden live end.
        live_end_joined(): its newest messages are loaded again.
        message_changed(object): ChatMessage.
        message_removed(str): message id.
        viewed_running(bool): a turn of it runs.
        draft_restored(object): Draft left by a previous run.
        prompt_restored(object, str): Draft of a prompt that did not go out, error.
        draft_save_state(bool, str): saved, error.
        approvals_changed(): its pending requests changed.
        info_changed(): its SessionInfo or model choices changed.
    """

    status_changed = Signal(object)
    sessions_changed = Signal(list)
    session_key_changed = Signal(str, str)
    running_changed = Signal(str, bool)
    requests_changed = Signal(str)
    commands_loaded = Signal(list)
    notice = Signal(str)

    viewed_key_changed = Signal(str)
    messages_reset = Signal(list)
    messages_prepended = Signal(list)
    messages_appended = Signal(list)
    messages_dropped = Signal(int, bool)
    newer_waiting = Signal(int)
    live_end_joined = Signal()
    message_changed = Signal(object)
    message_removed = Signal(str)
    viewed_running = Signal(bool)
    draft_restored = Signal(object)
    prompt_restored = Signal(object, str)
    draft_save_state = Signal(bool, str)
    approvals_changed = Signal()
    info_changed = Signal()

    # A session's event on its way to the GUI thread: key, the signal to emit, its arguments.
    _session_event = Signal(str, object, object)
    # The same for the chrome (the chat list, a turn's start and end): key ("" for the list).
    _chrome_event = Signal(str, object, object)

    def __init__(self, backend: ChatBackend, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.backend = backend
        self.profile_id = backend.profile_id
        self._viewed: str | None = None
        self._viewer = f"bridge-{next(_BRIDGES)}"  # its name to the backend's view_session
        self._gui_thread = threading.get_ident()  # the thread this bridge lives in
        # Connected before any receiver: the viewed key follows a rename before it is told.
        self.session_key_changed.connect(self._on_self_session_key_changed)
        self._session_event.connect(self._on_self_session_event)
        # The chat list and the running state redraw the sidebar, the tabs, the composer and the
        # tray: they follow one frame after the chat, in one go, so the end of one reply and the
        # start of the next (a queued prompt) do not hold up the new reply's first words.
        self._chrome: list[tuple[str, SignalInstance, tuple[object, ...]]] = []
        self._chrome_timer = QTimer(self)
        self._chrome_timer.setSingleShot(True)
        self._chrome_timer.setInterval(CHROME_MS)
        self._chrome_timer.timeout.connect(self.flush_chrome)
        self._chrome_event.connect(self._on_chrome_event)
        self._unsubscribe: Callable[[], None] | None = backend.subscribe(self)

    @property
    def viewed_key(self) -> str | None:
        """The session whose events reach the session signals (None: no session open)."""
        return self._viewed

    def view(self, key: str | None) -> None:
        """Route the events of session `key` (and no other) to the session signals; the
        backend hears that it is on screen (None: this bridge shows none of its chats)."""
        self._viewed = key
        if self._unsubscribe is not None:
            self.backend.view_session(self._viewer, key)

    def detach(self) -> None:
        """Stop listening (the profile was removed, or the window closes); idempotent. What it
        showed is no longer on screen through it."""
        self._chrome_timer.stop()
        self._chrome.clear()
        if self._unsubscribe is not None:
            self.backend.view_session(self._viewer, None)
            self._unsubscribe()
            self._unsubscribe = None

    def _to_viewed(self, key: str, signal: SignalInstance, *args: object) -> None:
        if key != self._viewed and threading.get_ident() == self._gui_thread:
            # Called on the GUI thread, the signal would reach its slot at once, which drops
            # it: dropped here, without a signal for each delta of every background chat.
            return
        self._session_event.emit(key, signal, args)

    def _on_self_session_event(self, key: str, signal: SignalInstance, args: tuple[object]) -> None:
        if key == self._viewed:
            signal.emit(*args)

    def _on_chrome_event(self, key: str, signal: SignalInstance, args: tuple[object, ...]) -> None:
        if self._unsubscribe is None:
            return  # detached while it was on its way
        if signal is self.sessions_changed:
            # A newer list says all an older one did.
            self._chrome = [c for c in self._chrome if c[1] is not self.sessions_changed]
        self._chrome.append((key, signal, args))
        if not self._chrome_timer.isActive():
            self._chrome_timer.start()

    def flush_chrome(self) -> None:
        """Emit the chrome news gathered so far now, in the order it came."""
        self._chrome_timer.stop()
        pending, self._chrome = self._chrome, []
        for key, signal, args in pending:
            if signal is not self.viewed_running or key == self._viewed:
                signal.emit(*args)

    def _on_self_session_key_changed(self, old_key: str, new_key: str) -> None:
        # Chrome news still on its way goes out under the new name (a new chat's turn starts
        # on its local key, which the gateway's id replaces moments later).
        self._chrome = [
            (
                new_key if key == old_key else key,
                signal,
                (new_key, *args[1:]) if key == old_key and signal is self.running_changed else args,
            )
            for key, signal, args in self._chrome
        ]
        if old_key == self._viewed:
            # Same conversation, new name: it stays the viewed one.
            self._viewed = new_key
            self.viewed_key_changed.emit(new_key)

    # -- BackendListener ----------------------------------------------------------------------

    def on_status(self, status: ConnectionStatus) -> None:
        self.status_changed.emit(status)

    def on_sessions(self, sessions: list[SessionSummary]) -> None:
        self._chrome_event.emit("", self.sessions_changed, (list(sessions),))

    def on_session_key_changed(self, old_key: str, new_key: str) -> None:
        self.session_key_changed.emit(old_key, new_key)

    def on_session_messages(self, key: str, messages: list[ChatMessage]) -> None:
        self._to_viewed(key, self.messages_reset, list(messages))

    def on_messages_prepended(self, key: str, messages: list[ChatMessage]) -> None:
        self._to_viewed(key, self.messages_prepended, list(messages))

    def on_messages_appended(self, key: str, messages: list[ChatMessage]) -> None:
        self._to_viewed(key, self.messages_appended, list(messages))

    def on_messages_dropped(self, key: str, count: int, newest: bool) -> None:
        self._to_viewed(key, self.messages_dropped, count, newest)

    def on_newer_waiting(self, key: str, replies: int) -> None:
        self._to_viewed(key, self.newer_waiting, replies)

    def on_live_end_joined(self, key: str) -> None:
        self._to_viewed(key, self.live_end_joined)

    def on_message_changed(self, key: str, message: ChatMessage) -> None:
        self._to_viewed(key, self.message_changed, message)

    def on_message_removed(self, key: str, message_id: str) -> None:
        self._to_viewed(key, self.message_removed, message_id)

    def on_running(self, key: str, running: bool) -> None:
        self._chrome_event.emit(key, self.viewed_running, (running,))
        self._chrome_event.emit(key, self.running_changed, (key, running))

    def on_notice(self, key: str, text: str) -> None:
        if key:
            self._to_viewed(key, self.notice, text)
        else:
            self.notice.emit(text)

    def on_draft_restored(self, key: str, draft: Draft) -> None:
        self._to_viewed(key, self.draft_restored, draft)

    def on_prompt_restored(self, key: str, draft: Draft, error: str) -> None:
        self._to_viewed(key, self.prompt_restored, draft, error)

    def on_draft_save_state(self, key: str, saved: bool, error: str) -> None:
        self._to_viewed(key, self.draft_save_state, saved, error)

    def on_approval_request(self, key: str, request: ApprovalRequest) -> None:
        self._to_viewed(key, self.approvals_changed)
        self.requests_changed.emit(key)

    def on_approval_closed(self, key: str, request_id: str) -> None:
        self._to_viewed(key, self.approvals_changed)
        self.requests_changed.emit(key)

    def on_session_info(self, key: str, info: SessionInfo) -> None:
        self._to_viewed(key, self.info_changed)

    def on_commands(self, key: str, commands: list[tuple[str, str]]) -> None:
        self.commands_loaded.emit(list(commands))

    def on_models(self, key: str, models: list[ModelChoice]) -> None:
        self._to_viewed(key, self.info_changed)


@dataclass(frozen=True, slots=True)
class ProfileEntry:
    """A profile as the window lists it: its name and the bridge to its backend."""

    name: str
    bridge: ProfileBridge

    @property
    def backend(self) -> ChatBackend:
        return self.bridge.backend
