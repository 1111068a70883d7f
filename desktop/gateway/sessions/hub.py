"""The session hub: creates, resumes and routes sessions, owns stream ownership and dedupe."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

from desktop.common.clock import Clock, TimerHandle
from desktop.common.codes import (
    RESUME_TARGET_NOT_FOUND,
    SESSION_BUSY,
    SESSION_NOT_FOUND,
    STREAM_OWNED,
    TRUNCATE_TARGET_GONE,
)
from desktop.common.limits import MAX_FRAME_BYTES
from desktop.gateway.providers.base import ModelSwitch, Provider
from desktop.gateway.sessions.attachments import MAX_STAGED, DecodedAttachment
from desktop.gateway.sessions.events import DEFAULT_REPLAY_LIMIT, EventLog
from desktop.gateway.sessions.spool import AttachmentSpool
from desktop.gateway.sessions.state import (
    Peer,
    PendingTurn,
    Session,
    new_runtime_id,
    new_stored_id,
    owner_is_live,
)
from desktop.gateway.sessions.store import Store
from desktop.gateway.sessions.turns import TurnWorker
from desktop.gateway.wire.faults import STREAM_OWNED_MESSAGE, RpcFault, invalid_params

log = logging.getLogger(__name__)

HEARTBEAT_DEADLINE = 45.0
TITLE_LIMIT = 60
# A session no socket owns, with nothing running, is dropped from memory after this long
# (Hermes 0.19: about 20 s). Longer than the client's heartbeat deadline, so a short drop
# reattaches with replay; after it the client resumes the session by its stored id.
IDLE_SESSION_TIMEOUT = 120.0


class SessionHub:
    """One per gateway process; every method runs on the event loop and never blocks on I/O."""

    def __init__(
        self,
        store: Store,
        provider: Provider,
        clock: Clock,
        spool: AttachmentSpool,
        *,
        epoch: str,
        heartbeat_deadline: float = HEARTBEAT_DEADLINE,
        replay_limit: int = DEFAULT_REPLAY_LIMIT,
        coalesce_interval: float = 0.033,
        idle_timeout: float = IDLE_SESSION_TIMEOUT,
        max_frame: int = MAX_FRAME_BYTES,
    ) -> None:
        self.store = store
        self.max_frame = max_frame
        self.provider = provider
        self.clock = clock
        self.spool = spool
        self.epoch = epoch
        self.deadline = heartbeat_deadline
        self.idle_timeout = idle_timeout
        self._replay_limit = replay_limit
        self._by_runtime: dict[str, Session] = {}
        self._by_stored: dict[str, Session] = {}
        self._reaper: TimerHandle | None = None
        self.duplicate_submits = 0
        self.reaped = 0
        self.turns = TurnWorker(
            store,
            provider,
            self.emit,
            spool,
            epoch=epoch,
            wall=clock.wall,
            coalesce_interval=coalesce_interval,
            provider_for=self._provider_for,
        )
        # The provider as a model switch (the app's configured providers); None for a fixed
        # one (tests, --provider): then model.options and config.set model are not offered.
        self.models: ModelSwitch | None = provider if isinstance(provider, ModelSwitch) else None

    # routing

    def emit(self, session: Session, type_: str, payload: dict[str, Any]) -> None:
        """Number the event, keep it for replay, and send it to the stream owner only."""
        params = session.log.append(session.runtime_id, type_, payload)
        owner = session.owner
        if owner is not None and owner.open:
            owner.send_event(params)

    def claim(self, session: Session, peer: Peer) -> None:
        """Make `peer` the stream owner unless another socket still owns it and is live."""
        owner = session.owner
        live = owner_is_live(owner, self.clock.monotonic(), self.deadline)
        if owner is not None and owner is not peer and live:
            raise RpcFault(STREAM_OWNED, STREAM_OWNED_MESSAGE)
        session.owner = peer
        session.detached_at = None

    def detach(self, peer: Peer) -> None:
        """A socket went away: its sessions keep running, unowned, until someone activates them
        or they have been idle and unowned for `idle_timeout` (then they leave memory)."""
        now = self.clock.monotonic()
        for session in list(self._by_runtime.values()):
            if session.owner is peer:
                session.owner = None
                session.detached_at = now
                if session.close_on_disconnect and not session.running:
                    self.clear_staged(session)
                    self._forget(session)
        self._schedule_reap()

    def _schedule_reap(self, delay: float | None = None) -> None:
        if self._reaper is None and self.idle_timeout > 0:
            wait = self.idle_timeout if delay is None else delay
            self._reaper = self.clock.call_later(wait, self._reap)

    def _reap(self) -> None:
        """Forget detached idle sessions past the timeout; their stored history stays."""
        self._reaper = None
        now = self.clock.monotonic()
        next_due: float | None = None
        for session in list(self._by_runtime.values()):
            since = session.detached_at
            if since is None or (session.owner is not None and session.owner.open):
                continue
            due = since + self.idle_timeout - now
            if due <= 0 and not session.running:
                self._forget(session)
                self.reaped += 1
            else:
                wait = due if due > 0 else 1.0  # a running turn: look again a little later
                next_due = wait if next_due is None else min(next_due, wait)
        if self.spool.sweep_due():
            self.spool.sweep(self._by_stored.keys())
        if next_due is not None:
            self._schedule_reap(next_due)

    def get(self, runtime_id: object) -> Session:
        if not isinstance(runtime_id, str) or runtime_id not in self._by_runtime:
            raise RpcFault(SESSION_NOT_FOUND, "session not found")
        return self._by_runtime[runtime_id]

    def _load(self, stored_id: str) -> Session | None:
        session = self._by_stored.get(stored_id)
        if session is not None:
            return session
        self.store.repair(stored_id, self.epoch, worker_alive=False)
        row = self.store.get_session(stored_id)
        if row is None:
            return None
        session = Session(
            runtime_id=new_runtime_id(),
            stored_id=row.id,
            title=row.title,
            source=row.source,
            started_at=row.started_at,
            log=EventLog(self._replay_limit, max_frame=self.max_frame),
            staged=self.spool.load(row.id),
            detached_at=self.clock.monotonic(),
        )
        self._register(session)
        self._schedule_reap()  # loaded for a read only: it leaves again unless claimed
        return session

    def _register(self, session: Session) -> None:
        self._by_runtime[session.runtime_id] = session
        self._by_stored[session.stored_id] = session

    def _forget(self, session: Session) -> None:
        self._by_runtime.pop(session.runtime_id, None)
        self._by_stored.pop(session.stored_id, None)

    # lifecycle

    def create(self, peer: Peer, *, title: str, source: str, close_on_disconnect: bool) -> Session:
        stored_id = new_stored_id()
        now = self.clock.wall()
        self.store.create_session(stored_id, title, source, now)
        session = Session(
            runtime_id=new_runtime_id(),
            stored_id=stored_id,
            title=title,
            source=source,
            started_at=now,
            log=EventLog(self._replay_limit, max_frame=self.max_frame),
            close_on_disconnect=close_on_disconnect,
            owner=peer,
        )
        self._register(session)
        self.emit(session, "session.info", self.info(session))
        return session

    def resume(self, peer: Peer, stored_id: object) -> Session:
        if not isinstance(stored_id, str) or not stored_id:
            raise invalid_params("session_id (stored id) is required")
        session = self._load(stored_id)
        if session is None:
            raise RpcFault(RESUME_TARGET_NOT_FOUND, "session to resume not found")
        self.claim(session, peer)
        return session

    def lookup_any(self, session_id: object) -> Session:
        """A runtime id, or a stored id loaded on demand (for read-only methods)."""
        if isinstance(session_id, str):
            if session_id in self._by_runtime:
                return self._by_runtime[session_id]
            loaded = self._load(session_id)
            if loaded is not None:
                return loaded
        raise RpcFault(SESSION_NOT_FOUND, "session not found")

    def close(self, session: Session) -> None:
        self.interrupt(session)
        session.owner = None
        self.clear_staged(session)
        self._forget(session)

    def delete(self, session: Session) -> None:
        self.close(session)
        self.store.delete_session(session.stored_id)

    def set_title(self, session: Session, title: str) -> None:
        self.store.set_title(session.stored_id, title)
        session.title = title
        self.emit(session, "session.title", {"title": title})

    # turns

    def submit(
        self,
        peer: Peer,
        session: Session,
        text: str,
        ref: str | None,
        *,
        truncate_before_user: int | None = None,
    ) -> dict[str, Any]:
        """Start (or queue) a turn of `text`. `truncate_before_user`: the prompt replaces the
        session's user turn of that ordinal and every row after it (Hermes'
        `truncate_before_user_ordinal`: Regenerate, edit-and-resend); refused while a turn
        runs, and with 4018 when there is no such turn."""
        digest = hashlib.sha256(f"{session.stored_id}\0{text}".encode()).hexdigest()
        if ref is not None:
            seen = self.store.find_submission(ref)
            if seen is not None:
                if seen.digest != digest:
                    raise RpcFault(
                        -32602,
                        "submission_ref was already used with a different payload",
                        {"reason": "submission_ref_conflict"},
                    )
                self.duplicate_submits += 1
                # The retry re-staged what the original already consumed: do not leak it on.
                self.clear_staged(session)
                return seen.result
        if truncate_before_user is not None:
            if session.running:
                raise RpcFault(SESSION_BUSY, "session busy: stop the current turn first")
            if self.store.truncate_before_user(session.stored_id, truncate_before_user) is None:
                raise RpcFault(
                    TRUNCATE_TARGET_GONE, "target user message is no longer in session history"
                )
        self.claim(session, peer)
        starting = not session.running
        result: dict[str, Any] = {"status": "streaming" if starting else "queued"}
        if ref is not None:
            result["submission_ref"] = ref
        described = [a.describe() for a in session.staged] or None
        # One transaction: when the disk is full nothing is recorded and the staged stay.
        self.store.record_submit(
            session.stored_id,
            ref=ref,
            digest=digest,
            result=result,
            text=text,
            now=self.clock.wall(),
            start_epoch=self.epoch if starting else None,
            attachments=described,
        )
        attachments = self.spool.take(session.staged)
        session.staged = []
        turn = PendingTurn(text=text, ref=ref, attachments=attachments, started=starting)
        session.pending.append(turn)
        if starting:
            session.worker = asyncio.create_task(
                self.turns.run(session), name=f"worker-{session.runtime_id}"
            )
        if not session.title:
            self.set_title(session, _auto_title(text))
        return result

    def stage(self, session: Session, decoded: DecodedAttachment) -> int:
        if len(session.staged) >= MAX_STAGED:
            raise invalid_params(f"at most {MAX_STAGED} attachments can be staged per turn")
        if self.spool.sweep_due():
            self.spool.sweep(self._by_stored.keys())
        session.staged.append(self.spool.stage(session.stored_id, decoded, self._by_stored.keys()))
        return len(session.staged)

    def clear_staged(self, session: Session) -> int:
        cleared, session.staged = session.staged, []
        self.spool.release(cleared)
        return len(cleared)

    def undo(self, session: Session) -> dict[str, Any]:
        """Drop the session's last exchange (a retried prompt goes in again as the same turn);
        refused while a turn runs, as Hermes does."""
        if session.running:
            raise RpcFault(SESSION_BUSY, "session busy: stop the current turn before undo")
        return {"removed": self.store.undo_last_turn(session.stored_id)}

    def interrupt(self, session: Session) -> bool:
        task = session.stream_task
        if task is None or task.done():
            return False
        task.cancel()
        return True

    async def shutdown(self) -> None:
        """Interrupt every turn and wait until each has persisted what it has."""
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        workers = [s.worker for s in self._by_runtime.values() if s.worker and not s.worker.done()]
        for session in self._by_runtime.values():
            session.pending = type(session.pending)(list(session.pending)[:1])
            self.interrupt(session)
        if workers:
            await asyncio.gather(*workers, return_exceptions=True)

    # views

    # the model switch

    def _provider_for(self, session: Session) -> Provider:
        if self.models is None:
            return self.provider
        return self.models.provider_for(self.store.session_model(session.stored_id))

    def model_options(self, session: Session) -> dict[str, Any]:
        assert self.models is not None
        return self.models.catalog(self.store.session_model(session.stored_id))

    def set_model(self, session: Session, value: str) -> dict[str, Any]:
        """Switch the session's model from its next turn (Hermes refuses while one runs)."""
        assert self.models is not None
        if session.running:
            raise RpcFault(SESSION_BUSY, "the model cannot change while a reply is running")
        try:
            pick = self.models.resolve(value)
        except ValueError as exc:
            raise invalid_params(str(exc)) from None
        self.store.set_session_model(session.stored_id, pick)
        self.emit(session, "session.info", self.info(session))
        return {"value": pick[1], "warning": "", "scope": "session"}

    def _model(self, session: Session) -> tuple[str, str]:
        if self.models is None:
            return getattr(self.provider, "name", ""), ""
        return self.models.describe(self.store.session_model(session.stored_id))

    def info(self, session: Session) -> dict[str, Any]:
        model, provider = self._model(session)
        return {
            "title": session.title,
            "stored_session_id": session.stored_id,
            "source": session.source,
            "started_at": session.started_at,
            "model": model,
            "provider": provider,
            "running": session.running,
            "queued": max(0, len(session.pending) - 1),
        }

    def snapshot(self, session: Session, *, omit_messages: bool = False) -> dict[str, Any]:
        self.turns.flush(session)
        if not session.running:
            self.store.repair(session.stored_id, self.epoch, worker_alive=False)
        if omit_messages:
            # Only the count is needed: read the last two rows (the in-flight exchange below
            # may hide them), not a 100,000-message history.
            rows, total = self.store.message_slice(session.stored_id, 0, 0)
            rows, _ = self.store.message_slice(session.stored_id, max(0, total - 2))
        else:
            rows = self.store.messages(session.stored_id)
            total = len(rows)
        if session.inflight is not None:
            # The in-flight exchange is reported in `inflight`, not as history rows.
            kept = [r for r in rows if r.status != "streaming"]
            if kept and kept[-1].role == "user":
                kept = kept[:-1]
            total -= len(rows) - len(kept)
            rows = kept
        snap: dict[str, Any] = {
            "session_id": session.runtime_id,
            "session_key": session.stored_id,
            "stored_session_id": session.stored_id,
            "running": session.running,
            "status": session.status,
            "info": self.info(session),
            "message_count": total,
            "last_seq": session.log.last_seq,
        }
        if not omit_messages:
            snap["messages"] = [r.to_wire() for r in rows]
        if session.inflight is not None:
            snap["inflight"] = session.inflight.to_wire()
        return snap

    def stats(self) -> dict[str, Any]:
        return {
            "served_submits": self.store.served_submits(),
            "duplicate_submits": self.duplicate_submits,
            "sessions": len(self._by_runtime),
            "reaped_sessions": self.reaped,
            "staged_bytes": self.spool.used_bytes,
            "running": sum(1 for s in self._by_runtime.values() if s.running),
        }


def _auto_title(text: str) -> str:
    first = " ".join(text.strip().split())
    return first if len(first) <= TITLE_LIMIT else first[: TITLE_LIMIT - 1].rstrip() + "…"
