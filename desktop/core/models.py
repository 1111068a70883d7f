"""Plain values shared by the core and the UI: connection status, sessions, messages, delivery."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class ConnectionState(Enum):
    CONNECTING = "connecting"
    ONLINE = "online"
    RECONNECTING = "reconnecting"
    PAUSED = "paused"
    FAILED = "failed"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class ConnectionStatus:
    """One state change of a profile's connection, as the UI shows it."""

    state: ConnectionState
    epoch: int
    generation: int
    reason: str = ""
    # For RECONNECTING: when (monotonic seconds) the next attempt is due.
    retry_at: float | None = None
    # Wall-clock time of the last successful connect, if any.
    last_connected_at: float | None = None


class DeliveryState(Enum):
    PENDING = "pending"  # queued or on the wire, outcome not known yet
    CONFIRMED = "confirmed"  # the gateway has it
    UNCONFIRMED = "unconfirmed"  # ambiguous: being reconciled
    FAILED = "failed"  # definitely not delivered; retryable by the user


class Role(Enum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file the user attached; `path` is the app's own copy in its data dir."""

    sha256: str
    filename: str
    mime: str
    size: int
    path: str


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """A row of the session list."""

    key: str  # stored (durable) session id
    title: str
    preview: str = ""
    updated_at: float = 0.0
    message_count: int = 0
    running: bool = False
    unread: int = 0
    runtime_id: str | None = None
    pinned: bool = False  # kept at the top of the list (local only)
    archived: bool = False  # left out of the list unless the Archived view is on; still searched


@dataclass(frozen=True, slots=True)
class ReplyVersion:
    """One reply to a prompt: an earlier one (Regenerate, edit-and-resend) is kept to switch
    back to. `prompt` is the prompt it answered (an edit changes it)."""

    text: str
    status: str = "complete"
    cause: str = ""
    model: str = ""
    prompt: str = ""


@dataclass(slots=True)
class ChatMessage:
    """One bubble in the chat view. Mutable: a streaming reply grows in place."""

    id: str
    role: Role
    text: str = ""
    thinking: str = ""
    created_at: float = 0.0
    streaming: bool = False
    # How a reply ended (desktop/core/chats/reply_state.py): complete | stopped | interrupted |
    # error; `cause` says why in words when it did not complete.
    status: str = "complete"
    cause: str = ""
    delivery: DeliveryState | None = None  # user messages only
    delivery_error: str = ""
    attachments: tuple[Attachment, ...] = ()
    tools: list[ToolCall] = field(default_factory=list)
    # message.complete's usage: input/output tokens, context_used/context_max, model.
    usage: dict[str, Any] = field(default_factory=dict)
    # How long the turn took, seconds from its message.start to its message.complete as this
    # client saw them (replies only); None when it did not see both.
    duration: float | None = None
    # Earlier replies to this reply's prompt, oldest first (assistant messages only); the
    # view shows < n/m > to switch between them and this one.
    versions: tuple[ReplyVersion, ...] = ()
    # Which one the view shows: an index into `versions`, -1 for this (the newest) reply.
    shown_version: int = -1


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    args: str = ""
    output: str = ""
    done: bool = False
    error: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Draft:
    """What the composer holds for one session: text, caret position and attachments, and
    the message being replied to (`quote`, as written; `quote_from` says whose, "" for none)."""

    text: str = ""
    cursor: int = 0
    attachments: tuple[Attachment, ...] = ()
    quote: str = ""
    quote_from: str = ""


@dataclass(frozen=True, slots=True)
class Question:
    """One question of a clarify request (Hermes 0.22 asks up to five in one card).

    `choices` are the agent's suggestions as it labelled them (the first may end in
    "(Recommended)"); a free-text answer is always allowed. `qid` keys the answer.
    """

    qid: str
    text: str
    choices: tuple[str, ...] = ()
    multi_select: bool = False


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A request the agent blocks on until the user answers it.

    kind: "approval" (choices once/session/always/deny), "clarify" (suggested answers or free
    text), "sudo" / "secret" (masked input, never stored), or "waiting" (a turn waits on a
    request this app was never sent; the only way out is stopping the turn).
    """

    request_id: str
    kind: str
    title: str
    detail: str = ""
    choices: tuple[str, ...] = ()
    # False when the gateway gave no request id (0.19 approvals): one was made up here.
    server_id: bool = True
    # Asked as a server->client request (Hermes 0.22): the JSON-RPC id the answer replies to
    # (also `request_id` then); "" when asked by an event and answered by a `*.respond` call.
    reply_to: str = ""
    # The gateway's own id of an approval (`params.request_id`), for `approval.received`.
    gateway_id: str = ""
    # A clarify request's questions, each answered by its qid (empty: one question, `title`).
    questions: tuple[Question, ...] = ()

    @property
    def masked(self) -> bool:
        return self.kind in ("sudo", "secret")


# What the user answers a request with: an approval choice (or True/False), one text (a
# clarify answer, password, secret), or a multi-question clarify's `{qid: text}`.
RequestAnswer = str | bool | dict[str, str]


@dataclass(frozen=True, slots=True)
class TodoItem:
    """One entry of the agent's task list (Hermes 0.22 `todo.updated`)."""

    content: str
    # pending | in_progress | completed | cancelled
    status: str = "pending"


@dataclass(frozen=True, slots=True)
class Subagent:
    """A child agent a turn delegated to (Hermes `subagent.*` events), as last reported."""

    id: str  # `subagent_id` (the handle `subagent.interrupt` takes)
    goal: str
    # running | completed | failed | interrupted | error | ... as Hermes says; "ended" when it
    # left the gateway's live roster while this client was away (its outcome unseen)
    status: str = "running"
    text: str = ""  # its latest live line (thinking, progress or tool preview)
    tools: tuple[str, ...] = ()  # the tools it called, oldest first ("name: preview")
    model: str = ""
    summary: str = ""  # what it answered, once complete
    duration: float | None = None  # seconds, once complete
    depth: int = 0
    stopping: bool = False  # the user asked to stop it; no end reported yet

    @property
    def running(self) -> bool:
        return self.status == "running"


@dataclass(frozen=True, slots=True)
class BackgroundProcess:
    """A process the agent left running for this session (Hermes `process.list`)."""

    id: str  # the registry's id (`process.kill {process_id}`)
    command: str
    status: str = "running"  # running | exited
    pid: int | None = None
    uptime: int | None = None  # seconds, when listed
    output: str = ""  # the tail of its output

    @property
    def running(self) -> bool:
        return self.status == "running"


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What the gateway says about a session's agent, for the chat header and status line."""

    model: str = ""
    provider: str = ""
    approval_mode: str = ""
    # Hermes' transient spinner text (thinking.delta / status.update / message.interim); ""
    # when idle.
    activity: str = ""
    # How full the model's context is, 0-100, from the latest usage the gateway sent
    # (`session.usage` ticks, `message.complete`, the snapshot's info); None when unknown.
    context_percent: int | None = None
    # The same in tokens, when the gateway said (for a tooltip): used, of at most.
    context_used: int | None = None
    context_max: int | None = None
    # The agent's latest task list (empty: it keeps none).
    todos: tuple[TodoItem, ...] = ()
    # Hermes' per-session approval bypass (`session.info` `yolo`): its tool calls run without
    # asking. None: the gateway does not say.
    auto_approve: bool | None = None
    # The subagents of this chat's latest turns, and its background processes.
    subagents: tuple[Subagent, ...] = ()
    processes: tuple[BackgroundProcess, ...] = ()
    # Why the context figure is missing, when it is ("" when known or not asked).
    context_note: str = ""
    # A reply is running in this chat.
    running: bool = False


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """A model the gateway offers for a session (`model.options`)."""

    provider: str  # slug, as config.set's `--provider` takes it
    provider_name: str
    model: str
    current: bool = False


@dataclass(frozen=True, slots=True)
class ReconnectRecord:
    """One past reconnect: when (wall seconds), and why the previous socket closed."""

    at: float
    reason: str


@dataclass(frozen=True, slots=True)
class Diagnostics:
    """A snapshot of a profile's connection internals for the details popover."""

    epoch: int = 0
    generation: int = 0
    dialect: str = ""
    last_inbound_age: float | None = None  # seconds since the last frame arrived
    heartbeat_rtts: tuple[float, ...] = ()  # most recent last, seconds
    reconnects: tuple[ReconnectRecord, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A file checkpoint Hermes took before the agent changed files (rollback.list)."""

    hash: str
    at: float | None  # wall seconds; None when the gateway's timestamp did not parse
    message: str = ""


@dataclass(frozen=True, slots=True)
class RollbackState:
    """A session's checkpoints as last asked. `available` False: `reason` says why restore is
    not offered. `diffs` maps a checkpoint hash to its diff against the files now ("" none),
    `loaded` False until the gateway answered once."""

    available: bool = False
    reason: str = ""
    checkpoints: tuple[Checkpoint, ...] = ()
    diffs: dict[str, str] = field(default_factory=dict)
    loaded: bool = False
