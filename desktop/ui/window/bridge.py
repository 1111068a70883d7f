"""Adapts a ChatBackend's callbacks into Qt signals tagged with the profile id."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from desktop.core.listeners import BackendListener
from desktop.core.models import (
    ChatMessage,
    ConnectionStatus,
    ModelChoice,
    SessionInfo,
    SessionSummary,
)
from desktop.ui.backend import ApprovalRequest, ChatBackend, Draft


class BackendBridge(QObject, BackendListener):
    """Listens to one backend and re-emits each callback as a signal carrying the profile id.

    Receivers live on the GUI thread, so a backend calling from another thread is queued there
    by Qt's automatic connections; on the qasync loop the calls are already on the GUI thread.

    Signals:
        status_changed(str, object): profile id, ConnectionStatus.
        sessions_changed(str, list): profile id, list of SessionSummary.
        session_key_changed(str, str, str): profile id, old (local) key, new (durable) key.
        messages_reset(str, str, list): profile id, session key, all ChatMessages.
        messages_prepended(str, str, list): profile id, session key, older ChatMessages.
        messages_appended(str, str, list): profile id, session key, newer ChatMessages.
        messages_dropped(str, str, int, bool): profile id, session key, count, newest.
        newer_waiting(str, str, int): profile id, session key, replies at the hidden live end.
        live_end_joined(str, str): profile id, session key; its newest messages are loaded again.
        message_changed(str, str, object): profile id, session key, ChatMessage.
        message_removed(str, str, str): profile id, session key, message id.
        running_changed(str, str, bool): profile id, session key, running.
        notice(str, str, str): profile id, session key ("" = profile-wide), text.
        draft_restored(str, str, object): profile id, session key, Draft.
        prompt_restored(str, str, object, str): profile id, session key, Draft, error.
        draft_save_state(str, str, bool, str): profile id, session key, saved, error.
        approval_requested(str, str, object): profile id, session key, ApprovalRequest.
        approval_closed(str, str, str): profile id, session key, request id.
        session_info(str, str, object): profile id, session key, SessionInfo.
        commands_loaded(str, str, list): profile id, session key, [(name, description)].
        models_loaded(str, str, list): profile id, session key, [ModelChoice].
    """

    status_changed = Signal(str, object)
    sessions_changed = Signal(str, list)
    session_key_changed = Signal(str, str, str)
    messages_reset = Signal(str, str, list)
    messages_prepended = Signal(str, str, list)
    messages_appended = Signal(str, str, list)
    messages_dropped = Signal(str, str, int, bool)
    newer_waiting = Signal(str, str, int)
    live_end_joined = Signal(str, str)
    message_changed = Signal(str, str, object)
    message_removed = Signal(str, str, str)
    running_changed = Signal(str, str, bool)
    notice = Signal(str, str, str)
    draft_restored = Signal(str, str, object)
    prompt_restored = Signal(str, str, object, str)
    draft_save_state = Signal(str, str, bool, str)
    approval_requested = Signal(str, str, object)
    approval_closed = Signal(str, str, str)
    session_info = Signal(str, str, object)
    commands_loaded = Signal(str, str, list)
    models_loaded = Signal(str, str, list)

    def __init__(self, backend: ChatBackend, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.backend = backend
        self.profile_id = backend.profile_id
        self._unsubscribe: Callable[[], None] | None = backend.subscribe(self)

    def detach(self) -> None:
        """Stop listening (the profile was removed, or the window closes); idempotent."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def on_status(self, status: ConnectionStatus) -> None:
        self.status_changed.emit(self.profile_id, status)

    def on_sessions(self, sessions: list[SessionSummary]) -> None:
        self.sessions_changed.emit(self.profile_id, list(sessions))

    def on_session_key_changed(self, old_key: str, new_key: str) -> None:
        self.session_key_changed.emit(self.profile_id, old_key, new_key)

    def on_session_messages(self, key: str, messages: list[ChatMessage]) -> None:
        self.messages_reset.emit(self.profile_id, key, list(messages))

    def on_messages_prepended(self, key: str, messages: list[ChatMessage]) -> None:
        self.messages_prepended.emit(self.profile_id, key, list(messages))

    def on_messages_appended(self, key: str, messages: list[ChatMessage]) -> None:
        self.messages_appended.emit(self.profile_id, key, list(messages))

    def on_messages_dropped(self, key: str, count: int, newest: bool) -> None:
        self.messages_dropped.emit(self.profile_id, key, count, newest)

    def on_newer_waiting(self, key: str, replies: int) -> None:
        self.newer_waiting.emit(self.profile_id, key, replies)

    def on_live_end_joined(self, key: str) -> None:
        self.live_end_joined.emit(self.profile_id, key)

    def on_message_changed(self, key: str, message: ChatMessage) -> None:
        self.message_changed.emit(self.profile_id, key, message)

    def on_message_removed(self, key: str, message_id: str) -> None:
        self.message_removed.emit(self.profile_id, key, message_id)

    def on_running(self, key: str, running: bool) -> None:
        self.running_changed.emit(self.profile_id, key, running)

    def on_notice(self, key: str, text: str) -> None:
        self.notice.emit(self.profile_id, key, text)

    def on_draft_restored(self, key: str, draft: Draft) -> None:
        self.draft_restored.emit(self.profile_id, key, draft)

    def on_prompt_restored(self, key: str, draft: Draft, error: str) -> None:
        self.prompt_restored.emit(self.profile_id, key, draft, error)

    def on_draft_save_state(self, key: str, saved: bool, error: str) -> None:
        self.draft_save_state.emit(self.profile_id, key, saved, error)

    def on_approval_request(self, key: str, request: ApprovalRequest) -> None:
        self.approval_requested.emit(self.profile_id, key, request)

    def on_approval_closed(self, key: str, request_id: str) -> None:
        self.approval_closed.emit(self.profile_id, key, request_id)

    def on_session_info(self, key: str, info: SessionInfo) -> None:
        self.session_info.emit(self.profile_id, key, info)

    def on_commands(self, key: str, commands: list[tuple[str, str]]) -> None:
        self.commands_loaded.emit(self.profile_id, key, list(commands))

    def on_models(self, key: str, models: list[ModelChoice]) -> None:
        self.models_loaded.emit(self.profile_id, key, list(models))
