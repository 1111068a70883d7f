"""What widgets need from a profile's core controller: `ChatBackend` (its listener is core's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from desktop.core.disk.store import HIT_END, HIT_START, SearchHit
from desktop.core.listeners import BackendListener
from desktop.core.models import (
    ApprovalRequest,
    Attachment,
    ChatMessage,
    ConnectionStatus,
    Diagnostics,
    Draft,
    ModelChoice,
    Question,
    ReconnectRecord,
    RequestAnswer,
    RollbackState,
    SessionInfo,
    SessionSummary,
)

__all__ = [
    "HIT_END",
    "HIT_START",
    "ApprovalRequest",
    "ChatBackend",
    "Diagnostics",
    "Draft",
    "Question",
    "ReconnectRecord",
    "RequestAnswer",
    "SearchHit",
]


class ChatBackend(Protocol):
    """What the UI needs from one profile's core controller: snapshots, listeners and intents.

    Intents return at once; their outcomes arrive through the listener callbacks.
    """

    @property
    def profile_id(self) -> str:
        """Stable id of the profile this backend serves."""
        ...

    def subscribe(self, listener: BackendListener) -> Callable[[], None]:
        """Subscribe to callbacks; calling the result unsubscribes (no callback reaches
        `listener` afterwards, not even one being delivered)."""
        ...

    def status(self) -> ConnectionStatus:
        """The current connection status."""
        ...

    def sessions(self) -> list[SessionSummary]:
        """The current session list, newest first: after a start, its newest rows (and those
        down to each session asked for by `summary`) until `load_all_sessions`."""
        ...

    def load_all_sessions(self) -> None:
        """List every session (what a start left unread is read from disk; `on_sessions`
        brings the whole list if it grew)."""
        ...

    def summary(self, key: str) -> SessionSummary | None:
        """Session `key`'s row of that list (title, preview, running, unread); asked for, it
        is in `sessions` from then on."""
        ...

    def unread(self) -> int:
        """Replies not seen yet, over all of this profile's sessions."""
        ...

    def busy_keys(self) -> list[str]:
        """The sessions with a turn running or a request waiting for the user, in the list's
        order: the few such chats looked at, not the whole list (the tabs and the running
        strip ask at every turn's start and end; a pass over 10,000 chats took ~40 ms)."""
        ...

    def pending_requests(self, key: str) -> list[ApprovalRequest]:
        """Requests of session `key` waiting for the user, oldest first; `on_approval_request`
        and `on_approval_closed` say when this changes."""
        ...

    def session_info(self, key: str) -> SessionInfo:
        """Session `key`'s model, provider and status line; `on_session_info` says when it
        changes."""
        ...

    def create_session(self) -> str:
        """Create a new (empty) session and return its key."""
        ...

    def branch_session(self, key: str, message_id: str) -> str | None:
        """A new chat with `key`'s messages up to `message_id` (the gateway's branch); its key
        at once, None when that message cannot be branched from. The gateway's refusal (one
        without branches, a limit of its own) is told in the new chat."""
        ...

    def branch_available(self) -> tuple[bool, str]:
        """Whether Branch from here is offered, and the reason when this gateway is known not
        to branch (it said so once)."""
        ...

    def open_session(self, key: str) -> list[ChatMessage]:
        """Open `key` (clears its unread count) and return its messages; which window shows
        it is told by `view_session`."""
        ...

    def view_session(self, viewer: str, key: str | None) -> None:
        """`viewer` (one window, or the main window's front tab) shows session `key` now
        (None: none of this profile's). Chats some viewer shows gather no unread marks."""
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

    def queued(self, key: str) -> list[ChatMessage]:
        """The follow-ups of `key` waiting behind its running reply, in the order they go."""
        ...

    def busy_default(self) -> str | None:
        """What Enter does while a reply runs (queue, steer, interrupt) as the gateway keeps
        it; None where it keeps none (the composer queues)."""
        ...

    def keep_busy_default(self, mode: str) -> None:
        """Keep `mode` (queue, steer, interrupt) as the gateway's busy default; the window
        reads `busy_default()` again when `on_status` comes."""

    def steer(self, key: str, text: str) -> None:
        """Put `text` into the running reply (`session.steer`); refused, it is queued."""

    def steer_queued(self, message_id: str) -> bool:
        """Offer the queued follow-up `message_id` to the running reply now."""
        ...

    def steer_available(self) -> tuple[bool, str]:
        """Whether Steer is offered on this connection, and the reason when not."""
        ...

    def move_queued(self, message_id: str, step: int) -> bool:
        """Send the queued follow-up `message_id` `step` places earlier (<0) or later."""
        ...

    def stop_and_send(self, key: str, text: str, attachments: tuple[Attachment, ...]) -> None:
        """Stop the running reply, then send `text` as the next message."""

    def retry(self, message_id: str) -> None:
        """Resend a failed prompt under its original idempotency key."""

    def retry_reply(self, key: str, reply_id: str) -> bool:
        """Send the prompt of the last reply again as the same turn (that reply and its prompt
        are replaced); False when it cannot be (the caller sends the prompt anew)."""
        ...

    def regenerate(self, key: str, reply_id: str) -> bool:
        """A new reply in the last reply's place, the old one kept as an earlier version;
        False when it cannot be replaced (not the last turn, offline)."""
        ...

    def resend_edited(
        self, key: str, prompt_id: str, text: str, attachments: tuple[Attachment, ...]
    ) -> bool:
        """The last turn's prompt, edited, replaces that prompt and its reply in place (the
        pair before kept as an earlier version); False when it cannot be replaced (not the
        last turn, a reply running, offline): the caller sends it as a new prompt."""
        ...

    def discard(self, message_id: str) -> None:
        """Drop an unsent (failed) prompt."""

    def edit_unsent(self, message_id: str) -> Draft | None:
        """Remove an unsent prompt and return it for editing in the composer."""
        ...

    def respond(self, key: str, request_id: str, answer: RequestAnswer) -> None:
        """Answer a request: an approval choice (once/session/always/deny), a clarify answer
        (one text, or `{qid: text}` for several questions), a password or secret ("" skips),
        or "stop" for a turn waiting on what cannot be shown."""

    def commands(self) -> list[tuple[str, str]]:
        """The gateway's slash commands (name, description) as last listed; empty: none yet."""
        ...

    def models(self, key: str) -> list[ModelChoice]:
        """The models last offered to session `key`; empty: none offered or not asked yet."""
        ...

    def load_commands(self, key: str) -> None:
        """Ask for the gateway's slash commands (once per profile: the backend knows whether it
        has them); they arrive via on_commands."""

    def run_command(self, key: str, command: str) -> None:
        """Run a slash command; its output is added to the chat."""

    def load_models(self, key: str) -> None:
        """Ask which models the session can use; they arrive via on_models."""

    def set_model(self, key: str, choice: ModelChoice) -> None:
        """Switch the session's model (where the gateway allows it)."""

    def set_auto_approve(self, key: str, on: bool) -> None:
        """Turn the gateway's approval bypass on or off for this session only."""

    def stop_subagent(self, key: str, subagent_id: str) -> None:
        """Stop one of the subagents session `key`'s turn delegated to (`subagent.interrupt`);
        its end arrives in the session info."""

    def kill_process(self, key: str, process_id: str) -> None:
        """Stop one background process the agent left running for session `key`."""

    def work_support(self) -> tuple[str, str]:
        """Why Stop on a subagent and on a background process are missing on this connection
        ("" where the gateway serves them)."""
        ...

    def compress(self, key: str, focus: str) -> None:
        """Ask the gateway to summarise the session's history (its outcome is a notice)."""

    def rollback_state(self, key: str) -> RollbackState:
        """The session's file checkpoints as last asked (not loaded yet: `loaded` False)."""
        ...

    def load_rollback(self, key: str) -> None:
        """Ask for the session's checkpoints; they arrive via on_rollback."""

    def rollback_diff(self, key: str, checkpoint: str) -> None:
        """Ask for the diff of a checkpoint against the files now; via on_rollback."""

    def restore_checkpoint(self, key: str, checkpoint: str, file_path: str = "") -> None:
        """Put one file (relative path) or all files back as at `checkpoint`; a notice says
        how it went, and a full restore takes the last exchange out of the chat."""

    def reload_models(self) -> None:
        """The model providers changed: ask again what every session asked before can use."""

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
        self,
        key: str,
        text: str,
        cursor: int,
        attachments: tuple[Attachment, ...],
        *,
        quote: str = "",
        quote_from: str = "",
    ) -> None:
        """Persist `key`'s draft, with the message it quotes ("" for none), debounced by the
        backend; outcome via on_draft_save_state."""

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

    def prompts(self) -> list[tuple[str, str]]:
        """(chat key, text) of the user's prompts over every chat, newest first."""
        ...

    def export_session(self, key: str, path: str) -> None:
        """Write session `key` to `path`: Markdown, or JSON (all the store keeps) for .json.

        Raises a StorageError (ExportError) with a reason the user can read when it fails.
        """

    def rename_session(self, key: str, title: str) -> None:
        """Give session `key` a new title."""

    def pin_session(self, key: str, pinned: bool) -> None:
        """Pin session `key` to the top of the list, or unpin it (kept on this computer)."""

    def archive_session(self, key: str, archived: bool) -> None:
        """Archive session `key` (hidden from the list, still searched) or restore it."""

    def delete_session(self, key: str) -> None:
        """Delete session `key` locally and on the gateway."""

    def diagnostics(self) -> Diagnostics:
        """Connection internals for the details popover."""
        ...
