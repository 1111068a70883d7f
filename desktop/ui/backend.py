"""The boundary between widgets and a profile's core controller: `ChatBackend` and its listener."""

from __future__ import annotations

from typing import Protocol

from desktop.core.models import (
    ApprovalRequest,
    Attachment,
    ChatMessage,
    ConnectionStatus,
    Diagnostics,
    Draft,
    ModelChoice,
    ReconnectRecord,
    SessionInfo,
    SessionSummary,
)
from desktop.core.storage import HIT_END, HIT_START, SearchHit

__all__ = [
    "HIT_END",
    "HIT_START",
    "ApprovalRequest",
    "BackendListener",
    "ChatBackend",
    "Diagnostics",
    "Draft",
    "ReconnectRecord",
    "SearchHit",
]


class BackendListener(Protocol):
    """Callbacks a backend makes; always from the thread that owns the backend's event loop."""

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


class ChatBackend(Protocol):
    """What the UI needs from one profile's core controller: snapshots, listeners and intents.

    Intents return at once; their outcomes arrive through the listener callbacks.
    """

    @property
    def profile_id(self) -> str:
        """Stable id of the profile this backend serves."""
        ...

    def add_listener(self, listener: BackendListener) -> None:
        """Subscribe to callbacks."""

    def remove_listener(self, listener: BackendListener) -> None:
        """Unsubscribe; no callback reaches `listener` afterwards."""

    def status(self) -> ConnectionStatus:
        """The current connection status."""
        ...

    def sessions(self) -> list[SessionSummary]:
        """The current session list, newest first."""
        ...

    def create_session(self) -> str:
        """Create a new (empty) session and return its key."""
        ...

    def open_session(self, key: str) -> list[ChatMessage]:
        """Make `key` the viewed session (clears its unread count) and return its messages."""
        ...

    def load_older(self, key: str) -> None:
        """Fetch the messages before the oldest loaded one, if the gateway pages its history
        (the answer is `on_messages_prepended`); nothing when all are loaded or one is on its
        way."""
        ...

    def load_newer(self, key: str) -> None:
        """Fetch the messages after the newest shown one while newer ones were let go (the
        answer is `on_messages_appended`); nothing when the live end is shown."""
        ...

    def send(self, key: str, text: str, attachments: tuple[Attachment, ...]) -> None:
        """Queue a prompt exactly once; its user message then appears via on_message_changed."""

    def interrupt(self, key: str) -> None:
        """Stop the running turn of `key`."""

    def retry(self, message_id: str) -> None:
        """Resend a failed prompt under its original idempotency key."""

    def discard(self, message_id: str) -> None:
        """Drop an unsent (failed) prompt."""

    def edit_unsent(self, message_id: str) -> Draft | None:
        """Remove an unsent prompt and return it for editing in the composer."""
        ...

    def respond(self, key: str, request_id: str, answer: str | bool) -> None:
        """Answer a request: an approval choice (once/session/always/deny), a clarify answer,
        a password or secret ("" skips), or "stop" for a turn waiting on what cannot be shown."""

    def load_commands(self, key: str) -> None:
        """Ask for the gateway's slash commands; they arrive via on_commands."""

    def run_command(self, key: str, command: str) -> None:
        """Run a slash command; its output is added to the chat."""

    def load_models(self, key: str) -> None:
        """Ask which models the session can use; they arrive via on_models."""

    def set_model(self, key: str, choice: ModelChoice) -> None:
        """Switch the session's model (where the gateway allows it)."""

    def pause(self) -> None:
        """Close the connection on purpose and stay offline until resume()."""

    def resume(self) -> None:
        """Leave the paused state and connect."""

    def reconnect_now(self) -> None:
        """Skip the backoff wait and try to connect at once."""

    def network_changed(self) -> None:
        """The OS reported a network change: probe the socket or reconnect early."""

    def woke_up(self) -> None:
        """The machine resumed from sleep: treat the socket as suspect."""

    def load_draft(self, key: str) -> Draft | None:
        """The saved draft of `key`, if any."""
        ...

    def save_draft(
        self, key: str, text: str, cursor: int, attachments: tuple[Attachment, ...]
    ) -> None:
        """Persist `key`'s draft (debounced by the backend); outcome via on_draft_save_state."""

    def attach_file(self, path: str) -> Attachment:
        """Copy a file into the app's data dir and return it as an attachment."""
        ...

    def attach_bytes(self, data: bytes, filename: str) -> Attachment:
        """Store pasted bytes (e.g. a clipboard image as PNG) and return an attachment."""
        ...

    def search(self, query: str) -> list[str]:
        """Keys of sessions whose title or message text matches `query`."""
        ...

    def search_hits(self, query: str) -> list[SearchHit]:
        """Full-text matches (titles first), each with a highlighted snippet and position."""
        ...

    def export_session(self, key: str, path: str) -> None:
        """Write session `key` to `path`: Markdown, or JSON (all the store keeps) for .json.

        Raises a StorageError (ExportError) with a reason the user can read when it fails.
        """

    def rename_session(self, key: str, title: str) -> None:
        """Give session `key` a new title."""

    def delete_session(self, key: str) -> None:
        """Delete session `key` locally and on the gateway."""

    def diagnostics(self) -> Diagnostics:
        """Connection internals for the details popover."""
        ...
