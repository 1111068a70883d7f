"""A scripted in-memory ChatBackend for widget tests: records intents, replays events on demand."""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtGui import QTextCharFormat

from desktop.core.listeners import BackendListener
from desktop.core.models import (
    Attachment,
    ChatMessage,
    ConnectionState,
    ConnectionStatus,
    DeliveryState,
    ModelChoice,
    Role,
    RollbackState,
    SessionInfo,
    SessionSummary,
)
from desktop.ui.backend import (
    HIT_END,
    HIT_START,
    ApprovalRequest,
    Diagnostics,
    Draft,
    SearchHit,
)
from desktop.ui.compose.composer import AttachBytes, AttachFile, Composer, store_files, store_image


@dataclass
class FakeBackend:
    """Implements ChatBackend; tests drive it with the `emit_*` helpers and read `calls`."""

    pid: str = "p1"
    calls: list[tuple[str, Any]] = field(default_factory=list)
    listeners: list[BackendListener] = field(default_factory=list)
    current_status: ConnectionStatus = field(
        default_factory=lambda: ConnectionStatus(ConnectionState.ONLINE, 1, 1)
    )
    summaries: list[SessionSummary] = field(default_factory=list)
    messages: dict[str, list[ChatMessage]] = field(default_factory=dict)
    drafts: dict[str, Draft] = field(default_factory=dict)
    diag: Diagnostics = field(default_factory=Diagnostics)
    older_asked: list[str] = field(default_factory=list)
    # What core keeps per session and the window asks for; `emit` keeps them as core does.
    pending: dict[str, dict[str, ApprovalRequest]] = field(default_factory=dict)
    infos: dict[str, SessionInfo] = field(default_factory=dict)
    commands_listed: list[tuple[str, str]] = field(default_factory=list)
    models_offered: dict[str, list[ModelChoice]] = field(default_factory=dict)
    newer_asked: list[str] = field(default_factory=list)
    queued_rows: dict[str, list[ChatMessage]] = field(default_factory=dict)
    steer_offered: tuple[bool, str] = (True, "")
    busy: str | None = None
    # As after a start: `sessions` lists this many (and those down to each `summary` asked
    # for) until `load_all_sessions`; None lists every one.
    first_rows: int | None = None
    work_reasons: tuple[str, str] = ("", "")  # work_support()
    replaces_in_place: bool = True  # resend_edited: the prompt is the last turn's
    rollbacks: dict[str, RollbackState] = field(default_factory=dict)
    viewers: dict[str, str] = field(default_factory=dict)  # view_session: viewer -> key
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    @property
    def profile_id(self) -> str:
        return self.pid

    # -- ChatBackend ------------------------------------------------------------------------
    def subscribe(self, listener: BackendListener) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener) if listener in self.listeners else None

    def status(self) -> ConnectionStatus:
        return self.current_status

    def sessions(self) -> list[SessionSummary]:
        if self.first_rows is None:
            return list(self.summaries)
        return self.summaries[: self.first_rows]

    def load_all_sessions(self) -> None:
        if self.first_rows is not None:
            self.first_rows = None
            self.emit("on_sessions", list(self.summaries))

    def summary(self, key: str) -> SessionSummary | None:
        at = next((i for i, s in enumerate(self.summaries) if s.key == key), None)
        if at is None:
            return None
        if self.first_rows is not None:
            self.first_rows = max(self.first_rows, at + 1)
        return self.summaries[at]

    def unread(self) -> int:
        return sum(s.unread for s in self.summaries)

    def busy_keys(self) -> list[str]:
        return [s.key for s in self.summaries if s.running or self.pending.get(s.key)]

    def pending_requests(self, key: str) -> list[ApprovalRequest]:
        return list(self.pending.get(key, {}).values())

    def session_info(self, key: str) -> SessionInfo:
        return self.infos.get(key, SessionInfo())

    def create_session(self) -> str:
        key = f"{self.pid}-new{next(self._ids)}"
        self.summaries.insert(0, SessionSummary(key=key, title=""))
        self.calls.append(("create_session", key))
        return key

    branch_limit = ""  # why this gateway cannot branch ("" while it can)

    def branch_available(self) -> tuple[bool, str]:
        return not self.branch_limit, self.branch_limit

    def branch_session(self, key: str, message_id: str) -> str | None:
        branch = f"{key}-branch{next(self._ids)}"
        upto = [m.id for m in self.messages.get(key, [])]
        if message_id not in upto:
            return None
        self.messages[branch] = self.messages[key][: upto.index(message_id) + 1]
        self.summaries.insert(0, SessionSummary(key=branch, title="branch"))
        self.calls.append(("branch_session", (key, message_id)))
        return branch

    def open_session(self, key: str) -> list[ChatMessage]:
        self.calls.append(("open_session", key))
        return list(self.messages.get(key, []))

    def view_session(self, viewer: str, key: str | None) -> None:
        # Told at every chat shown: kept apart from `calls`, which tests compare.
        if key is None:
            self.viewers.pop(viewer, None)
        else:
            self.viewers[viewer] = key

    def load_older(self, key: str) -> None:
        # Asked on every scroll near the top: kept apart from `calls`, which tests compare.
        self.older_asked.append(key)

    def load_newer(self, key: str) -> None:
        self.newer_asked.append(key)

    def send(self, key: str, text: str, attachments: tuple[Attachment, ...]) -> None:
        self.calls.append(("send", (key, text, attachments)))

    def interrupt(self, key: str) -> None:
        self.calls.append(("interrupt", key))

    def retry(self, message_id: str) -> None:
        self.calls.append(("retry", message_id))

    def retry_reply(self, key: str, reply_id: str) -> bool:
        self.calls.append(("retry_reply", reply_id))
        return False

    def regenerate(self, key: str, reply_id: str) -> bool:
        self.calls.append(("regenerate", reply_id))
        return False

    def resend_edited(
        self, key: str, prompt_id: str, text: str, attachments: tuple[Attachment, ...]
    ) -> bool:
        self.calls.append(("resend_edited", prompt_id))
        return self.replaces_in_place

    def discard(self, message_id: str) -> None:
        self.calls.append(("discard", message_id))

    def queued(self, key: str) -> list[ChatMessage]:
        return list(self.queued_rows.get(key, []))

    def keep_busy_default(self, mode: str) -> None:
        self.calls.append(("keep_busy_default", mode))

    def busy_default(self) -> str | None:
        return self.busy

    def steer(self, key: str, text: str) -> None:
        self.calls.append(("steer", (key, text)))

    def steer_queued(self, message_id: str) -> bool:
        self.calls.append(("steer_queued", message_id))
        return True

    def steer_available(self) -> tuple[bool, str]:
        return self.steer_offered

    def move_queued(self, message_id: str, step: int) -> bool:
        self.calls.append(("move_queued", (message_id, step)))
        return True

    def stop_and_send(self, key: str, text: str, attachments: tuple[Attachment, ...]) -> None:
        self.calls.append(("stop_and_send", (key, text, attachments)))

    def edit_unsent(self, message_id: str) -> Draft | None:
        self.calls.append(("edit_unsent", message_id))
        for msgs in self.messages.values():
            for m in msgs:
                if m.id == message_id:
                    return Draft(m.text, len(m.text), m.attachments)
        return None

    def respond(self, key: str, request_id: str, answer: str | bool) -> None:
        self.calls.append(("respond", (key, request_id, answer)))
        self.emit("on_approval_closed", key, request_id)  # answered: core closes it

    def commands(self) -> list[tuple[str, str]]:
        return list(self.commands_listed)

    def models(self, key: str) -> list[ModelChoice]:
        return list(self.models_offered.get(key, []))

    def load_commands(self, key: str) -> None:
        self.calls.append(("load_commands", key))

    def run_command(self, key: str, command: str) -> None:
        self.calls.append(("run_command", (key, command)))

    def load_models(self, key: str) -> None:
        self.calls.append(("load_models", key))

    def set_model(self, key: str, choice: Any) -> None:
        self.calls.append(("set_model", (key, choice)))

    def set_auto_approve(self, key: str, on: bool) -> None:
        self.calls.append(("set_auto_approve", (key, on)))

    def compress(self, key: str, focus: str) -> None:
        self.calls.append(("compress", (key, focus)))

    def rollback_state(self, key: str) -> RollbackState:
        return self.rollbacks.get(key, RollbackState())

    def load_rollback(self, key: str) -> None:
        self.calls.append(("load_rollback", key))

    def rollback_diff(self, key: str, checkpoint: str) -> None:
        self.calls.append(("rollback_diff", (key, checkpoint)))

    def restore_checkpoint(self, key: str, checkpoint: str, file_path: str = "") -> None:
        self.calls.append(("restore_checkpoint", (key, checkpoint, file_path)))

    def stop_subagent(self, key: str, subagent_id: str) -> None:
        self.calls.append(("stop_subagent", (key, subagent_id)))

    def kill_process(self, key: str, process_id: str) -> None:
        self.calls.append(("kill_process", (key, process_id)))

    def work_support(self) -> tuple[str, str]:
        return self.work_reasons

    def pause(self) -> None:
        self.calls.append(("pause", None))

    def resume(self) -> None:
        self.calls.append(("resume", None))

    def reconnect_now(self) -> None:
        self.calls.append(("reconnect_now", None))

    def network_changed(self) -> None:
        self.calls.append(("network_changed", None))

    def woke_up(self) -> None:
        self.calls.append(("woke_up", None))

    def load_draft(self, key: str) -> Draft | None:
        return self.drafts.get(key)

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
        self.drafts[key] = Draft(text, cursor, attachments, quote, quote_from)
        self.calls.append(("save_draft", (key, text)))

    def attach_file(self, path: str) -> Attachment:
        self.calls.append(("attach_file", path))
        name = path.rsplit("/", 1)[-1]
        return make_attachment(name, path.encode())

    def attach_bytes(self, data: bytes, filename: str) -> Attachment:
        self.calls.append(("attach_bytes", (len(data), filename, data[:8])))
        return make_attachment(filename, data)

    def search(self, query: str) -> list[str]:
        q = query.casefold()
        return [
            key for key, msgs in self.messages.items() if any(q in m.text.casefold() for m in msgs)
        ]

    def search_hits(self, query: str) -> list[SearchHit]:
        """Like the store: a snippet around the first match, marked with HIT_START/HIT_END."""
        q = query.casefold().strip()
        hits: list[SearchHit] = []
        for key, msgs in self.messages.items():
            for idx, m in enumerate(msgs):
                at = m.text.casefold().find(q)
                if q and at >= 0:
                    end = at + len(q)
                    snippet = (
                        m.text[max(0, at - 30) : at]
                        + HIT_START
                        + m.text[at:end]
                        + HIT_END
                        + m.text[end : end + 30]
                    )
                    hits.append(SearchHit(key, snippet, "message", idx))
        return hits

    def prompts(self) -> list[tuple[str, str]]:
        keys = [s.key for s in sorted(self.summaries, key=lambda s: -s.updated_at)]
        return [
            (k, m.text)
            for k in keys
            for m in reversed(self.messages.get(k, []))
            if m.role is Role.USER and m.text
        ]

    def export_session(self, key: str, path: str) -> None:
        self.calls.append(("export_session", (key, path)))

    def rename_session(self, key: str, title: str) -> None:
        self.calls.append(("rename_session", (key, title)))

    def pin_session(self, key: str, pinned: bool) -> None:
        self.calls.append(("pin_session", (key, pinned)))

    def archive_session(self, key: str, archived: bool) -> None:
        self.calls.append(("archive_session", (key, archived)))

    def delete_session(self, key: str) -> None:
        self.calls.append(("delete_session", key))

    def diagnostics(self) -> Diagnostics:
        return self.diag

    # -- scripting --------------------------------------------------------------------------
    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def emit(self, method: str, *args: Any) -> None:
        self._keep(method, *args)
        for listener in list(self.listeners):
            getattr(listener, method)(*args)
        self.chrome_now()

    def chrome_now(self) -> None:
        """The window hears the news at once: a bridge's chrome (the chat list, a turn's start
        and end) otherwise follows a frame later; that delay is tested in test_bridge."""
        if threading.current_thread() is threading.main_thread():
            for listener in list(self.listeners):
                flush = getattr(listener, "flush_chrome", None)
                if flush is not None:
                    flush()

    def _keep(self, method: str, *args: Any) -> None:
        """What core would know after telling this: the requests and infos it hands out."""
        if method == "on_approval_request":
            key, request = args
            self.pending.setdefault(key, {})[request.request_id] = request
        elif method == "on_approval_closed":
            key, request_id = args
            self.pending.get(key, {}).pop(request_id, None)
        elif method == "on_session_info":
            key, info = args
            self.infos[key] = info
        elif method == "on_rollback":
            self.rollbacks[args[0]] = args[1]
        elif method == "on_commands":
            self.commands_listed = list(args[1])
        elif method == "on_models":
            key, models = args
            self.models_offered[key] = list(models)
        elif method == "on_session_key_changed":
            old, new = args
            for kept in (self.pending, self.infos, self.models_offered):
                if old in kept:
                    kept[new] = kept.pop(old)

    def notify(self, call: Callable[[BackendListener], object]) -> None:
        """What core's parts call to reach listeners (`desktop.core.listeners.Notify`)."""
        for listener in list(self.listeners):
            call(listener)
        self.chrome_now()

    def set_status(self, status: ConnectionStatus) -> None:
        self.current_status = status
        self.emit("on_status", status)

    def set_sessions(self, sessions: list[SessionSummary]) -> None:
        self.summaries = list(sessions)
        self.emit("on_sessions", list(sessions))


def make_attachment(filename: str, data: bytes) -> Attachment:
    digest = hashlib.sha256(data + filename.encode()).hexdigest()
    return Attachment(digest, filename, "application/octet-stream", len(data), f"/tmp/{digest}")


def user(mid: str, text: str, delivery: DeliveryState = DeliveryState.CONFIRMED) -> ChatMessage:
    return ChatMessage(id=mid, role=Role.USER, text=text, delivery=delivery, created_at=1.7e9)


def assistant(mid: str, text: str, **kw: Any) -> ChatMessage:
    return ChatMessage(id=mid, role=Role.ASSISTANT, text=text, created_at=1.7e9, **kw)


def approval(rid: str = "r1", kind: str = "approval", **kw: Any) -> ApprovalRequest:
    return ApprovalRequest(
        rid, kind, "Run `rm -rf build/`?", "The agent wants to run a shell command", **kw
    )


def wire_attachments(
    composer: Composer, attach_file: AttachFile, attach_bytes: AttachBytes
) -> None:
    """Wire a composer as the window does: it asks for attachments, `attach_*` store them."""
    composer.files_to_attach.connect(
        lambda paths: composer.show_attached(*store_files(paths, attach_file))
    )
    composer.image_to_attach.connect(
        lambda data, name: composer.show_attached(*store_image(data, name, attach_bytes))
    )


def laid_out(view: Any, row: int) -> list[tuple[str, QTextCharFormat]]:
    """A chat view's message as laid out now: each run of one format, with the format."""
    doc = view.bubbles.layout_for(view.chat_model.index(row)).doc
    assert doc is not None
    found: list[tuple[str, QTextCharFormat]] = []
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            found.append((it.fragment().text(), it.fragment().charFormat()))
            it += 1
        block = block.next()
    return found
