"""What the user asks of the open chat (send, drafts, earlier prompts, message actions, requests,
connection), passed to the shown profile's backend."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QWidget

from desktop.core.chats.turns import prompt_before
from desktop.core.models import Attachment, ModelChoice, Role
from desktop.ui.agent.compress_focus import CompressFocus
from desktop.ui.backend import ChatBackend, Draft
from desktop.ui.chat.restore_dialog import open_restore
from desktop.ui.chat.view import ChatView
from desktop.ui.compose.composer import Composer, store_files, store_image
from desktop.ui.compose.prompt_history import PromptHistory
from desktop.ui.compose.prompt_search import PromptSearch
from desktop.ui.compose.queued_rows import QueuedRows
from desktop.ui.window.pane.approvals import ApprovalsPanel
from desktop.ui.window.pane.details import DetailsDialog
from desktop.ui.window.pane.header import ChatHeader

# Said when an edited prompt cannot take its own place (only the last turn can be replaced).
NOT_IN_PLACE = "Only the last message can be replaced: this one goes out as a new message"


class OpenChat(Protocol):
    """The shown profile and its open chat, as the window knows them."""

    @property
    def backend(self) -> ChatBackend | None: ...
    @property
    def session_key(self) -> str | None: ...
    def create_chat(self) -> str | None: ...
    def show_approvals(self) -> None: ...
    def show_status(self, text: str, ms: int) -> None: ...


class ChatIntents(QObject):
    """Connects the chat's widgets' requests to the backend of the profile shown in `chat`."""

    # A chat to show: a branch just made from a message of this one (its temporary key).
    chat_wanted = Signal(str)

    def __init__(
        self,
        chat: OpenChat,
        *,
        view: ChatView,
        composer: Composer,
        header: ChatHeader,
        approvals: ApprovalsPanel,
        details: DetailsDialog,
        queued: QueuedRows,
        popups: QWidget,
    ) -> None:
        super().__init__(composer)
        self._chat = chat
        self._view = view
        self._composer = composer
        self._approvals = approvals
        self._details = details
        self._connection = header.connection
        composer.send_requested.connect(self._on_composer_send_requested)
        composer.stop_requested.connect(self.stop)
        composer.busy_send_requested.connect(self._on_composer_busy_send_requested)
        composer.resend_requested.connect(self._on_composer_resend_requested)
        self._queued = queued
        queued.action.connect(self._on_queued_action)
        composer.draft_changed.connect(self._on_composer_draft_changed)
        composer.files_to_attach.connect(self._on_composer_files_to_attach)
        composer.image_to_attach.connect(self._on_composer_image_to_attach)
        view.action_requested.connect(self._on_chat_view_action_requested)
        view.code_copied.connect(lambda _text: chat.show_status("Code copied", 2000))
        view.text_copied.connect(lambda _text: chat.show_status("Copied", 2000))
        view.quote_requested.connect(composer.quote)
        view.unavailable.connect(lambda text: chat.show_status(text, 5000))
        view.set_branch_check(self._branch_available)
        view.older_wanted.connect(self._on_chat_view_older_wanted)
        view.newer_wanted.connect(self._on_chat_view_newer_wanted)
        view.live_end_wanted.connect(self._on_chat_view_live_end_wanted)
        header.model_chosen.connect(self._on_header_model_chosen)
        header.auto_approve_toggled.connect(self._on_header_auto_approve_toggled)
        header.compress_requested.connect(self._on_header_compress_requested)
        approvals.answered.connect(self._on_approvals_answered)
        self._connection.reconnect_requested.connect(self._on_connection_reconnect_requested)
        self._connection.pause_requested.connect(self._on_connection_pause_requested)
        self._connection.resume_requested.connect(self._on_connection_resume_requested)
        self._connection.details_requested.connect(self._on_connection_details_requested)
        self.prompt_history = PromptHistory(composer.edit, self._prompts_here)
        self.prompt_search = PromptSearch(popups, self._all_prompts)
        self.prompt_search.chosen.connect(self._on_prompt_chosen)

    def _branch_available(self) -> tuple[bool, str]:
        open_ = self._open()
        return open_[0].branch_available() if open_ is not None else (True, "")

    def _prompts_here(self) -> list[str]:
        """The open chat's prompts, oldest first (what Up walks in an empty message box)."""
        model = self._view.chat_model
        shown = (model.message_at(row) for row in range(model.rowCount()))
        return [m.text for m in shown if m.role is Role.USER]

    def _all_prompts(self) -> list[tuple[str, str]]:
        backend = self._chat.backend
        return backend.prompts() if backend is not None else []

    def search_prompts(self) -> None:
        """Ctrl+R: search the prompts of every chat; the one chosen goes in the message box."""
        self.prompt_search.popup(self._composer.edit)

    def _on_prompt_chosen(self, text: str) -> None:
        edit = self._composer.edit
        edit.setPlainText(text)
        edit.moveCursor(QTextCursor.MoveOperation.End)
        edit.setFocus(Qt.FocusReason.OtherFocusReason)

    def _open(self) -> tuple[ChatBackend, str] | None:
        backend, key = self._chat.backend, self._chat.session_key
        return (backend, key) if backend is not None and key is not None else None

    def stop(self) -> None:
        """Esc: interrupt the running turn of the open session; with none running, stop
        editing a sent prompt."""
        open_ = self._open()
        if open_ is not None and self._composer.running:
            open_[0].interrupt(open_[1])
        elif self._composer.editing is not None:
            self._composer.cancel_edit()

    def _start_chat(self) -> str | None:
        # Typing straight into an empty window starts a chat, as in any messenger.
        draft = self._composer.draft()
        key = self._chat.create_chat()
        if key is not None and (draft.text or draft.attachments):
            self._composer.load_draft(draft)  # opening the new chat must not drop the text
        return key

    def _on_composer_send_requested(self, text: str, attachments: tuple[Attachment, ...]) -> None:
        backend = self._chat.backend
        key = self._chat.session_key or self._start_chat()
        if backend is None or key is None:
            return
        if not attachments and self._composer.is_command(text):
            backend.run_command(key, text.strip())  # the gateway's command, not a prompt
            return
        backend.send(key, text, attachments)

    def _on_composer_resend_requested(
        self, message_id: str, text: str, attachments: tuple[Attachment, ...]
    ) -> None:
        open_ = self._open()
        if open_ is None:
            return
        backend, key = open_
        if not backend.resend_edited(key, message_id, text, attachments):
            # Not the last turn any more (or offline): it goes out as a new message.
            backend.send(key, text, attachments)
            self._chat.show_status(NOT_IN_PLACE, 5000)

    def _on_composer_busy_send_requested(
        self, mode: str, text: str, attachments: tuple[Attachment, ...]
    ) -> None:
        open_ = self._open()
        if open_ is None:
            return
        backend, key = open_
        if mode == "steer":
            backend.steer(key, text)
        else:
            backend.stop_and_send(key, text, attachments)

    def show_queue(self) -> None:
        """The open chat's queued follow-ups above the composer, and whether Steer is offered."""
        open_ = self._open()
        if open_ is None:
            self._queued.show_queued([])
            return
        backend, key = open_
        steer = backend.steer_available()
        self._queued.set_steer(*steer)
        self._composer.set_steer(*steer)
        self._queued.show_queued(backend.queued(key))

    def _on_queued_action(self, kind: str, message_id: str) -> None:
        open_ = self._open()
        if open_ is None:
            return
        backend = open_[0]
        if kind == "edit":
            draft = backend.edit_unsent(message_id)
            if draft is not None:
                self._composer.set_draft(draft)
                self._composer.focus_edit(Qt.FocusReason.OtherFocusReason)
        elif kind in ("up", "down"):
            backend.move_queued(message_id, -1 if kind == "up" else 1)
        elif kind == "steer":
            backend.steer_queued(message_id)
        elif kind == "cancel":
            backend.discard(message_id)
        self.show_queue()

    def _on_composer_draft_changed(self, draft: Draft) -> None:
        backend, key = self._chat.backend, self._chat.session_key
        if backend is None:
            return
        if key is None:
            if not (draft.text.strip() or draft.attachments or draft.quote):
                return
            # Text typed before any chat exists is a draft too: give it a chat to be saved in.
            key = self._start_chat()
            if key is None:
                return
        backend.save_draft(
            key,
            draft.text,
            draft.cursor,
            draft.attachments,
            quote=draft.quote,
            quote_from=draft.quote_from,
        )

    def _on_composer_files_to_attach(self, paths: list[str]) -> None:
        backend = self._chat.backend
        if backend is not None:
            self._composer.show_attached(*store_files(paths, backend.attach_file))

    def _on_composer_image_to_attach(self, data: bytes, filename: str) -> None:
        backend = self._chat.backend
        if backend is not None:
            self._composer.show_attached(*store_image(data, filename, backend.attach_bytes))

    def _on_chat_view_action_requested(self, kind: str, message_id: str) -> None:
        backend, key = self._chat.backend, self._chat.session_key
        if backend is None:
            return
        if kind == "retry":
            backend.retry(message_id)
        elif kind == "discard":
            backend.discard(message_id)
        elif kind == "edit":
            draft = backend.edit_unsent(message_id)
            if draft is not None:
                self._composer.set_draft(draft)
        elif kind == "resend":
            msg = self._view.message(message_id)
            if msg is not None:
                draft = Draft(msg.text, len(msg.text), msg.attachments)
                prompts = [m for m in self._view.messages() if m.role is Role.USER]
                if prompts and prompts[-1].id == msg.id and not self._composer.running:
                    # The last turn's prompt: sent again, it replaces itself and its reply.
                    self._composer.edit_sent(msg.id, draft)
                else:
                    # An earlier prompt stays where it is: the edited text goes out as new.
                    self._composer.set_draft(draft)
                    self._chat.show_status(NOT_IN_PLACE, 5000)
        elif kind == "branch" and key:
            branch = backend.branch_session(key, message_id)
            if branch is not None:
                self.chat_wanted.emit(branch)  # the branch, under its key once it is made
        elif kind == "restore_changes" and key:
            reply = self._view.message(message_id)
            if reply is not None:
                colors = self._view.bubbles.colors
                messages = self._view.messages()
                open_restore(backend, key, reply, messages, colors=colors, parent=self._view)
        elif kind == "retry_reply" and key:
            if not backend.retry_reply(key, message_id):
                self._on_chat_view_action_requested("regenerate", message_id)
        elif kind == "regenerate" and key:
            if backend.regenerate(key, message_id):
                return  # the last reply: replaced in place, kept as an earlier version
            prompt = prompt_before(self._view.messages(), message_id)
            if prompt is not None:
                # An older reply cannot be replaced: the prompt goes out again as a new one.
                backend.send(key, prompt.text, prompt.attachments)

    def _on_chat_view_older_wanted(self) -> None:
        open_ = self._open()
        if open_ is not None:
            open_[0].load_older(open_[1])

    def _on_chat_view_newer_wanted(self) -> None:
        open_ = self._open()
        if open_ is not None:
            open_[0].load_newer(open_[1])

    def _on_chat_view_live_end_wanted(self) -> None:
        open_ = self._open()
        if open_ is not None:
            # Jump to newest far up: the session is shown again from its live end.
            self._view.show_messages(open_[0].open_session(open_[1]))

    def _on_header_model_chosen(self, choice: ModelChoice) -> None:
        open_ = self._open()
        if open_ is not None:
            open_[0].set_model(open_[1], choice)

    def _on_header_compress_requested(self) -> None:
        open_ = self._open()
        if open_ is None:
            return
        focus = CompressFocus.ask(self._composer.window())
        if focus is not None:
            open_[0].compress(open_[1], focus)

    def _on_header_auto_approve_toggled(self, on: bool) -> None:
        open_ = self._open()
        if open_ is not None:
            open_[0].set_auto_approve(open_[1], on)

    def _on_approvals_answered(self, request_id: str, answer: object, had_focus: bool) -> None:
        open_ = self._open()
        if open_ is None:
            return
        assert isinstance(answer, bool | str | dict)
        open_[0].respond(open_[1], request_id, answer)  # core drops the request: its card goes
        self._chat.show_approvals()
        if had_focus and not self._approvals.isVisible():
            self._composer.focus_edit()  # the last card answered: back to typing

    def _on_connection_reconnect_requested(self) -> None:
        if self._chat.backend is not None:
            self._chat.backend.reconnect_now()

    def _on_connection_pause_requested(self) -> None:
        if self._chat.backend is not None:
            self._chat.backend.pause()

    def _on_connection_resume_requested(self) -> None:
        if self._chat.backend is not None:
            self._chat.backend.resume()

    def _on_connection_details_requested(self) -> None:
        if self._chat.backend is None:
            return
        self._details.show_diagnostics(self._chat.backend.diagnostics())
        button = self._connection.details_button
        self._details.adjustSize()
        pos = button.mapToGlobal(button.rect().bottomRight())
        self._details.move(pos.x() - self._details.width(), pos.y() + 4)
        self._details.show()
