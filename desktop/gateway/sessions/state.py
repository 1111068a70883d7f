"""A session's runtime state: ids, stream owner, replay log, turn queue and staged attachments."""

from __future__ import annotations

import asyncio
import secrets
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from desktop.gateway.sessions.attachments import StagedAttachment
from desktop.gateway.sessions.events import EventLog


class Peer(Protocol):
    """What a session needs of a socket: liveness facts and a non-blocking event send."""

    @property
    def open(self) -> bool: ...

    @property
    def last_inbound(self) -> float: ...

    def send_event(self, params: dict[str, Any]) -> None: ...


@dataclass(slots=True)
class PendingTurn:
    text: str
    ref: str | None
    attachments: list[StagedAttachment]
    started: bool = False


@dataclass(slots=True)
class Inflight:
    user: str
    assistant: str = ""
    thinking: str = ""
    streaming: bool = True

    def to_wire(self) -> dict[str, Any]:
        return {"user": self.user, "assistant": self.assistant, "streaming": self.streaming}


@dataclass(slots=True)
class Session:
    runtime_id: str
    stored_id: str
    title: str
    source: str
    started_at: float
    log: EventLog
    close_on_disconnect: bool = False
    owner: Peer | None = None
    pending: deque[PendingTurn] = field(default_factory=deque)
    staged: list[StagedAttachment] = field(default_factory=list)
    inflight: Inflight | None = None
    worker: asyncio.Task[None] | None = None
    stream_task: asyncio.Task[None] | None = None
    # When its stream owner went away (monotonic); None while a socket owns it.
    detached_at: float | None = None

    @property
    def running(self) -> bool:
        return self.worker is not None and not self.worker.done()

    @property
    def status(self) -> str:
        if not self.running:
            return "idle"
        return "queued" if self.pending else "running"


def new_runtime_id() -> str:
    """Short, process-local, never reused within a process in practice (48 random bits)."""
    return secrets.token_hex(6)


def new_stored_id() -> str:
    return secrets.token_hex(16)


def owner_is_live(owner: Peer | None, now: float, deadline: float) -> bool:
    """A live owner has an open socket that sent something within the heartbeat deadline."""
    return owner is not None and owner.open and now - owner.last_inbound <= deadline
