"""What a profile's controller tells its listeners (`BackendListener`) and how its parts do it."""

from __future__ import annotations

from collections.abc import Callable

from desktop.core.models import (
    ApprovalRequest,
    ChatMessage,
    ConnectionStatus,
    Draft,
    ModelChoice,
    RollbackState,
    SessionInfo,
    SessionSummary,
)

__all__ = ["BackendListener", "Notify", "notice"]


class BackendListener:
    """Callbacks a profile's controller makes, on the thread that owns its event loop.

    Listeners subclass it and override the callbacks they want; the others do nothing. (A
    plain class, not a Protocol: Qt objects listen too, and their metaclass takes no other.)
    """

    def on_status(self, status: ConnectionStatus) -> None:
        """The connection state changed."""

    def on_sessions(self, sessions: list[SessionSummary]) -> None:
        """The whole session list, replacing the previous one."""

    def on_session_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """All messages of session `key` were reloaded (e.g. after a resume)."""

    def on_messages_prepended(self, key: str, messages: list[ChatMessage]) -> None:
        """Older messages of `key` were loaded (`load_older`); they go before the shown ones."""

    def on_messages_appended(self, key: str, messages: list[ChatMessage]) -> None:
        """Newer messages of `key` were loaded (`load_newer`); they go after the shown ones."""

    def on_messages_dropped(self, key: str, count: int, newest: bool) -> None:
        """The `count` newest (or oldest) shown messages of `key` were let go: far from where
        the user reads, fetched again when scrolled back to."""

    def on_newer_waiting(self, key: str, replies: int) -> None:
        """While `key`'s newest messages are let go (the user reads far up), `replies` new
        replies came at its live end."""

    def on_live_end_joined(self, key: str) -> None:
        """The newer pages loaded back (`load_newer`) reached `key`'s live end: its newest
        messages are shown again, nothing of it is let go any more."""

    def on_session_key_changed(self, old_key: str, new_key: str) -> None:
        """A locally created session got its durable key from the gateway."""

    def on_message_changed(self, key: str, message: ChatMessage) -> None:
        """One message was added or changed in place (deltas, delivery state, tools)."""

    def on_message_removed(self, key: str, message_id: str) -> None:
        """A message was removed (a discarded unsent prompt)."""

    def on_running(self, key: str, running: bool) -> None:
        """A turn started or finished in session `key`."""

    def on_notice(self, key: str, text: str) -> None:
        """A transient notice for the user; `key` is "" for profile-wide notices."""

    def on_draft_restored(self, key: str, draft: Draft) -> None:
        """A saved draft was loaded back into session `key`'s composer (after a crash)."""

    def on_prompt_restored(self, key: str, draft: Draft, error: str) -> None:
        """A prompt whose delivery is not confirmed went back to the composer for a retry."""

    def on_draft_save_state(self, key: str, saved: bool, error: str) -> None:
        """Autosave of `key`'s draft succeeded (saved=True) or failed with `error`."""

    def on_approval_request(self, key: str, request: ApprovalRequest) -> None:
        """The agent asks the user to approve an action or answer a question."""

    def on_approval_closed(self, key: str, request_id: str) -> None:
        """A pending approval/clarify request was answered elsewhere or expired."""

    def on_session_info(self, key: str, info: SessionInfo) -> None:
        """The session's model/provider changed, or its transient status line."""

    def on_commands(self, key: str, commands: list[tuple[str, str]]) -> None:
        """The gateway's slash commands (name, description); empty: it has none."""

    def on_models(self, key: str, models: list[ModelChoice]) -> None:
        """Models the session can switch to; empty: this gateway offers no switch."""

    def on_rollback(self, key: str, state: RollbackState) -> None:
        """The session's file checkpoints (or why there are none), and any diffs asked for."""


# How the controller's parts reach its listeners: `notify(lambda l: l.on_sessions(summaries))`
# calls every subscribed listener, each call checked by mypy against `BackendListener`.
Notify = Callable[[Callable[[BackendListener], object]], object]


def notice(notify: Notify, key: str, text: str) -> None:
    """Tell every listener `text` about session `key` ("" for the whole profile).

    A function, so that code in loops and `except` blocks makes no lambda of its own.
    """
    notify(lambda listener: listener.on_notice(key, text))
