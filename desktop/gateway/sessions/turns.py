"""The turn worker: runs a session's queued prompts one by one, streaming from the provider."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sqlite3
from collections.abc import Callable
from typing import Any

from desktop.gateway.providers.base import ChatMessage, ChunkKind, Provider, ProviderError
from desktop.gateway.sessions.spool import AttachmentSpool
from desktop.gateway.sessions.state import Inflight, PendingTurn, Session
from desktop.gateway.sessions.store import Store
from desktop.gateway.wire.faults import storage_fault
from desktop.gateway.wire.text import scrub

log = logging.getLogger(__name__)

Emit = Callable[[Session, str, dict[str, Any]], None]
# Persist a streaming reply's text at most this often, so kill -9 loses little.
PARTIAL_SAVE_INTERVAL = 1.0


class DeltaCoalescer:
    """Merges text deltas for about `interval` seconds; flushed before any other event."""

    def __init__(self, session: Session, emit: Emit, interval: float) -> None:
        self._session = session
        self._emit = emit
        self._interval = interval
        self._buffer: list[str] = []
        self._timer: asyncio.TimerHandle | None = None
        self._last_flush = 0.0

    def add(self, text: str) -> None:
        self._buffer.append(text)
        loop = asyncio.get_running_loop()
        wait = self._last_flush + self._interval - loop.time()
        if wait <= 0:
            self.flush()
        elif self._timer is None:
            self._timer = loop.call_later(wait, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._last_flush = asyncio.get_running_loop().time()
        if self._buffer:
            text = "".join(self._buffer)
            self._buffer.clear()
            self._emit(self._session, "message.delta", {"text": text})


class TurnWorker:
    """Owns how turns run; one worker task per busy session, stream tasks it can interrupt."""

    def __init__(
        self,
        store: Store,
        provider: Provider,
        emit: Emit,
        spool: AttachmentSpool,
        *,
        epoch: str,
        wall: Callable[[], float],
        coalesce_interval: float = 0.033,
        provider_for: Callable[[Session], Provider] | None = None,
    ) -> None:
        self._store = store
        self._provider = provider
        # What streams a session's reply: its picked model's provider (the model switch).
        self._provider_for = provider_for or (lambda _session: provider)
        self._emit = emit
        self._spool = spool
        self._epoch = epoch
        self._wall = wall
        self._interval = coalesce_interval
        self.coalescers: dict[str, DeltaCoalescer] = {}

    def start_turn(self, session: Session, turn: PendingTurn) -> None:
        """Persist the prompt and mark the session running (synchronously, before any reply)."""
        self._store.start_turn(
            session.stored_id,
            ref=turn.ref,
            text=turn.text,
            attachments=[a.describe() for a in turn.attachments] or None,
            epoch=self._epoch,
            now=self._wall(),
        )
        turn.started = True

    async def run(self, session: Session) -> None:
        """Drain the session's queue; the task ends when nothing is left to run."""
        try:
            while session.pending:
                turn = session.pending[0]
                try:
                    if not turn.started:
                        self.start_turn(session, turn)
                    await self._run_one(session, turn)
                except Exception as exc:
                    # The turn could not start or finish (its store write failed): say why,
                    # and go on with the next prompt rather than leaving the session stuck.
                    log.error("a turn failed outside its stream", exc_info=exc)
                    self.coalescers.pop(session.runtime_id, None)
                    session.inflight = None
                    self._emit(session, "error", {"message": _cause(exc)})
                finally:
                    self._spool.release(turn.attachments)
                session.pending.popleft()
        finally:
            self._emit(session, "status.update", {"status": "idle", "queued": 0})

    def flush(self, session: Session) -> None:
        coalescer = self.coalescers.get(session.runtime_id)
        if coalescer is not None:
            coalescer.flush()

    async def _run_one(self, session: Session, turn: PendingTurn) -> None:
        inflight = Inflight(user=turn.text)
        session.inflight = inflight
        coalescer = DeltaCoalescer(session, self._emit, self._interval)
        self.coalescers[session.runtime_id] = coalescer
        self._emit(
            session, "status.update", {"status": "running", "queued": len(session.pending) - 1}
        )
        reply_id = self._store.begin_reply(session.stored_id, self._wall())
        self._emit(session, "message.start", {"role": "assistant"})
        messages = self._context(session, turn)
        provider = self._provider_for(session)
        status, error = "complete", ""
        stream = asyncio.create_task(
            self._stream(provider, session, messages, inflight, coalescer, reply_id=reply_id),
            name=f"turn-{session.runtime_id}",
        )
        session.stream_task = stream
        try:
            await asyncio.wait({stream})
        finally:
            session.stream_task = None
        if stream.cancelled():
            status = "interrupted"
        elif (exc := stream.exception()) is not None:
            status = "error"
            error = exc.message if isinstance(exc, ProviderError) else _cause(exc)
            if not isinstance(exc, ProviderError):
                log.error("turn failed", exc_info=exc)
        coalescer.flush()
        del self.coalescers[session.runtime_id]
        inflight.streaming = False
        usage = self._usage(provider) if status == "complete" else None
        try:
            self._store.finish_turn(session.stored_id, reply_id, inflight.assistant, status, usage)
        except Exception as exc:
            log.exception("could not persist the end of a turn")
            status, error = "error", f"{_cause(exc)}: this reply was not saved"
        if error:
            self._emit(session, "error", {"message": error})
        payload: dict[str, Any] = {"text": inflight.assistant, "status": status}
        payload["usage"] = usage or {}
        self._emit(session, "message.complete", payload)
        session.inflight = None

    async def _stream(
        self,
        provider: Provider,
        session: Session,
        messages: list[ChatMessage],
        inflight: Inflight,
        coalescer: DeltaCoalescer,
        *,
        reply_id: int,
    ) -> None:
        loop = asyncio.get_running_loop()
        saved_at = loop.time()
        async for chunk in provider.stream(messages):
            # A provider's JSON may escape a lone surrogate: never store or send one.
            text = scrub(chunk.text)
            if chunk.kind is ChunkKind.TEXT:
                inflight.assistant += text
                coalescer.add(text)
            elif chunk.kind is ChunkKind.THINKING:
                coalescer.flush()
                inflight.thinking += text
                # Hermes semantics: reasoning.delta is the model's reasoning; thinking.delta is
                # only spinner text (docs/protocol.md).
                self._emit(session, "reasoning.delta", {"text": text})
            else:
                coalescer.flush()
                self._emit(session, "notice", {"level": "info", "message": text})
            if loop.time() - saved_at >= PARTIAL_SAVE_INTERVAL:
                saved_at = loop.time()
                self._store.save_partial(reply_id, inflight.assistant)

    def _context(self, session: Session, turn: PendingTurn) -> list[ChatMessage]:
        """The conversation as the provider sees it; the new prompt carries its attachments."""
        rows = [m for m in self._store.messages(session.stored_id) if m.status != "streaming"]
        out = [ChatMessage(role=m.role, content=m.text) for m in rows if m.text]
        if out and out[-1].role == "user":
            out.pop()
        extra: list[str] = []
        images: list[str] = []
        for att in turn.attachments:
            url = att.data_url() if att.kind == "image" else None
            if url is not None:
                images.append(url)
            else:
                extra.append(att.inline_text())
        content = "\n\n".join([turn.text, *extra]) if extra else turn.text
        out.append(ChatMessage(role="user", content=content, images=tuple(images)))
        return out

    def _usage(self, provider: Provider) -> dict[str, Any] | None:
        usage = provider.last_usage
        return dataclasses.asdict(usage) if usage is not None else None


def _cause(exc: BaseException) -> str:
    """What a user is told when a turn fails for a reason of the gateway's own."""
    if isinstance(exc, sqlite3.Error):
        return storage_fault(exc).message
    return "internal error in the turn"
