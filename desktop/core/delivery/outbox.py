"""The outbox: prompts persisted before sending, delivered once, never lost or doubled. The one
home of the exactly-once decision: when a prompt is sent, re-sent, confirmed or given back."""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar

from desktop.common.clock import Clock, TimerHandle
from desktop.common.codes import (
    METHOD_NOT_FOUND,
    RESUME_TARGET_NOT_FOUND,
    SESSION_BUSY,
    SESSION_NOT_FOUND,
)
from desktop.common.limits import (
    MAX_ATTACHMENTS,
    MAX_INLINE_TEXT_BYTES,
    is_inline_text,
    prompt_too_large,
)
from desktop.common.methods import (
    ATTACHMENTS_CLEAR,
    FILE_ATTACH_BYTES,
    IMAGE_ATTACH_BYTES,
    PROMPT_SUBMIT,
    SESSION_HISTORY,
)
from desktop.common.retry import RetrySchedule
from desktop.core.disk.attachments import AttachmentError, is_image
from desktop.core.disk.store import OutboxEntry, Store, Wire
from desktop.core.errors import (
    CallTimeoutError,
    ConnectionLostError,
    GatewayError,
    HermesQtError,
    NotConnectedError,
    RpcError,
)
from desktop.core.link.dialect import Dialect
from desktop.core.models import Attachment, DeliveryState
from desktop.core.observers import Observers, Unsubscribe

log = logging.getLogger(__name__)
# Re-sends of a prompt whose send failed retryably: 1 s, 2 s, 4 s ... 30 s.
RESEND = RetrySchedule(first=1.0, cap=30.0)
SESSION_GONE = "session no longer exists"
NOT_CONFIRMED = "delivery not confirmed"
# Said under a follow-up the outbox holds while the session's reply streams. No gateway names
# its turns, and a busy prompt.submit is folded into the running turn (0.20.1, 0.22) or cuts it
# off (0.19): held here, each follow-up becomes its own turn, bound to its own reply.
HELD = "Queued: sends when the reply finishes"


class GatewayPort(Protocol):
    """The slice of one profile's gateway client the outbox needs."""

    @property
    def dialect(self) -> Dialect | None: ...

    def is_online(self) -> bool: ...

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = ...
    ) -> Any: ...

    async def reattach(self, session_key: str, runtime_hint: str) -> Mapping[str, Any] | None:
        """The session's snapshot without messages (attached again); None when it is gone."""
        ...

    async def resume(self, session_key: str) -> str | None:
        """Resume the session by its stored id; its new runtime id, None when it is gone."""
        ...

    def turn_state(self, session_key: str) -> tuple[bool, int] | None:
        """(a turn is running, how many turns have ended) of the session's chat; None when
        the client does not follow the session."""
        ...

    def user_rows(self, session_key: str) -> int | None:
        """How many user rows the session's gateway history holds (None: not known)."""
        ...

    def watch(self, session_key: str, callback: Callable[[], None]) -> Unsubscribe | None:
        """`callback()` whenever the session's chat changes; None when it is not followed."""
        ...


# The profile's port by profile id; None while the profile is not running.
PortLookup = Callable[[str], GatewayPort | None]
StateListener = Callable[[OutboxEntry], None]
L = TypeVar("L")
# Returns False when the prompt could not be kept (then the entry stays and is offered again).
RestoreListener = Callable[[OutboxEntry], bool | None]


# How long a prompt just written may take to show its turn's message.start before the next
# prompt stops waiting for that turn (its events may have been lost with a socket).
TURN_START_GRACE = 10.0


@dataclass(slots=True)
class _TurnMark:
    """Our last prompt of a session: the chat's turns-ended count when it was written."""

    ended: int
    written_at: float
    started: bool = False  # its turn was seen running


class OutboxError(HermesQtError):
    """An outbox request the entry's state does not allow (e.g. editing a sent prompt)."""

    retryable = False


@dataclass(slots=True)
class ReconcileResult:
    confirmed: list[OutboxEntry] = field(default_factory=list)
    failed: list[OutboxEntry] = field(default_factory=list)
    unresolved: list[OutboxEntry] = field(default_factory=list)


class _Fail(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Outbox:
    """Delivery jobs in the store: per session in order, each prompt executed exactly once.

    An ambiguous outcome (socket lost or reply timed out after prompt.submit was written) is
    UNCONFIRMED. With a gateway that de-duplicates `submission_ref` it is re-sent with the same
    ref; otherwise it is never re-sent and waits for `reconcile()` against the session's state.
    """

    def __init__(
        self,
        store: Store,
        ports: PortLookup,
        clock: Clock,
        *,
        call_timeout: float = 30.0,
        retry: RetrySchedule = RESEND,
        holds: Callable[[str], bool] | None = None,
    ) -> None:
        self._store = store
        # Sessions whose prompts must wait (e.g. not yet created on the gateway).
        self._holds = holds or (lambda _key: False)
        self._ports = ports
        self._clock = clock
        self.call_timeout = call_timeout
        self._retry = retry
        self._workers: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._timers: dict[tuple[str, str], TimerHandle] = {}
        self._sending: set[str] = set()
        self._steering: set[str] = set()  # queued prompts being offered as a steer
        self._resumed: set[str] = set()
        # A prompt sent again in its own place (Regenerate, edit-and-resend): the params that
        # cut the gateway's history before it (`prompt.submit{truncate_before_*}`), by ref.
        # Kept in memory only: after a restart the entry goes out as a plain prompt.
        self._rewinds: dict[str, dict[str, Any]] = {}
        # Per session: the turns-ended count of its chat when our last prompt was written. Until
        # the count moves past it that prompt's turn is not over and the next one is held.
        self._turn_marks: dict[tuple[str, str], _TurnMark] = {}
        self._watches: dict[tuple[str, str], Unsubscribe] = {}
        self._settle_watches: dict[tuple[str, str], Unsubscribe] = {}
        self._settling: set[asyncio.Task[None]] = set()
        self._state_listeners: _ByProfile[StateListener] = _ByProfile("outbox state")
        self._removed_listeners: _ByProfile[StateListener] = _ByProfile("outbox removed")
        self._restore_listeners: _ByProfile[RestoreListener] = _ByProfile("outbox restore")
        self._recover()

    # -- listeners --------------------------------------------------------------------------

    def on_state(self, callback: StateListener, profile_id: str | None = None) -> Unsubscribe:
        """`callback(entry)` on every delivery state change (queued, confirmed, ...) of the
        profile's entries (every profile's when None)."""
        return self._state_listeners.add(profile_id, callback)

    def on_removed(self, callback: StateListener, profile_id: str | None = None) -> Unsubscribe:
        """`callback(entry)` when an entry of the profile leaves the outbox (delivered,
        restored, cancelled)."""
        return self._removed_listeners.add(profile_id, callback)

    def on_restore(self, callback: RestoreListener, profile_id: str | None = None) -> Unsubscribe:
        """`callback(entry)` with a prompt of the profile that was not delivered: put it back
        in the composer. Without such a listener the entry stays (and is offered again)."""
        return self._restore_listeners.add(profile_id, callback)

    # -- user intents -----------------------------------------------------------------------

    def submit(
        self,
        profile_id: str,
        session_key: str,
        runtime_id: str,
        text: str,
        attachments: Iterable[Attachment] = (),
        *,
        history_len: int | None = None,
        rewind: Mapping[str, Any] | None = None,
    ) -> OutboxEntry:
        """Persist (synced) a new prompt, then start sending it if the profile is online.

        `history_len` is how many messages `session.history` holds now; it lets reconcile tell
        this prompt from an identical older one. Defaults to the cached session's count.
        `rewind`: params added to its `prompt.submit` that cut the gateway's history before
        it (the prompt replaces the turn it names and every one after it).
        Raises StorageError when it cannot be persisted: then nothing was sent; OutboxError
        for a prompt larger than one frame may carry (the composer refuses it first).
        """
        too_large = prompt_too_large(text)
        if too_large:
            raise OutboxError(f"Not sent: {too_large}")
        if history_len is None:
            cached = self._store.session(profile_id, session_key)
            history_len = cached.message_count if cached else 0
        entry = self._store.outbox_add(
            OutboxEntry(
                submission_ref=uuid.uuid4().hex,
                seq=0,
                profile_id=profile_id,
                session_key=session_key,
                runtime_id=runtime_id,
                text=text,
                attachments=tuple(attachments),
                created_at=self._clock.wall(),
                history_mark=history_len,
            )
        )
        if rewind:
            self._rewinds[entry.submission_ref] = dict(rewind)
        self._emit(self._state_listeners, entry)
        self._kick(profile_id, session_key)
        return entry

    def edit(self, ref: str, text: str) -> OutboxEntry:
        """Change the text of a prompt that is still queued (no byte of it sent)."""
        self._queued(ref)
        entry = self._store.outbox_update(ref, text=text)
        assert entry is not None
        self._emit(self._state_listeners, entry)
        return entry

    def cancel(self, ref: str) -> OutboxEntry:
        """Drop a prompt that is still queued; returns it (e.g. to put it back in the composer)."""
        entry = self._queued(ref)
        self._store.outbox_delete(ref)
        self._emit(self._removed_listeners, entry)
        return entry

    def move(self, ref: str, step: int) -> bool:
        """Move a queued prompt `step` places earlier (<0) or later (>0) among its session's
        prompts that are still queued; False when it cannot move that way."""
        entry = self._queued(ref)
        queued = [
            e.submission_ref
            for e in self._store.outbox_entries(entry.profile_id, entry.session_key)
            if self._editable(e)
        ]
        at = queued.index(ref)
        to = at + step
        if step == 0 or not 0 <= to < len(queued):
            return False
        one = 1 if to > at else -1
        for i in range(at, to, one):  # adjacent swaps: the others keep their order
            self._store.outbox_swap(queued[i], queued[i + one])
            queued[i], queued[i + one] = queued[i + one], queued[i]
        for e in self._store.outbox_entries(entry.profile_id, entry.session_key):
            self._emit(self._state_listeners, e)
        return True

    def queued(self, profile_id: str, session_key: str) -> list[OutboxEntry]:
        """The session's prompts that are still only queued here, in send order."""
        return [e for e in self._store.outbox_entries(profile_id, session_key) if self._editable(e)]

    def hold_for_steer(self, ref: str) -> OutboxEntry:
        """Keep a queued prompt back while it is offered to the running turn as a steer: no
        worker sends it, no edit changes it, until `steered` or `not_steered`."""
        entry = self._queued(ref)
        self._steering.add(ref)
        return entry

    def steered(self, ref: str) -> None:
        """The steer went out (taken, or unknown): the prompt leaves the queue and is never
        sent as a follow-up as well (an ambiguous steer is not retried)."""
        self._steering.discard(ref)
        entry = self._store.outbox_get(ref)
        if entry is None:
            return
        self._store.outbox_delete(ref)
        self._emit(self._removed_listeners, entry)
        self._kick(entry.profile_id, entry.session_key)

    def not_steered(self, ref: str) -> None:
        """The turn provably did not take it: it stays queued as a follow-up."""
        self._steering.discard(ref)
        entry = self._store.outbox_get(ref)
        if entry is not None:
            self._kick(entry.profile_id, entry.session_key)

    def retry(self, ref: str) -> OutboxEntry | None:
        """Send a FAILED prompt again under its original `submission_ref`.

        FAILED means the gateway provably did not run it, so a resend cannot double it.
        Returns None when the entry is gone or not failed (nothing to retry).
        """
        entry = self._store.outbox_get(ref)
        if entry is None or entry.state is not DeliveryState.FAILED or ref in self._sending:
            return None
        entry = self._set(
            entry, state=DeliveryState.PENDING, error="", attempts=0, wire=_staged(entry)
        )
        self._kick(entry.profile_id, entry.session_key)
        return entry

    def entries(self, profile_id: str | None = None) -> list[OutboxEntry]:
        return self._store.outbox_entries(profile_id)

    def unconfirmed_sessions(self, profile_id: str) -> set[str]:
        """Sessions with a prompt awaiting reconcile (the session layer reconciles them)."""
        return {
            e.session_key
            for e in self._store.outbox_entries(profile_id)
            if e.state is DeliveryState.UNCONFIRMED
        }

    def _retarget(self, profile_id: str, session_key: str, runtime_id: str) -> None:
        """The router resumed the session under a new runtime id: its prompts go there."""
        for e in self._store.outbox_entries(profile_id, session_key):
            if e.runtime_id != runtime_id:
                self._store.outbox_update(e.submission_ref, runtime_id=runtime_id)

    # -- driving ----------------------------------------------------------------------------

    def on_online(self, profile_id: str | None = None) -> None:
        """The profile (or every profile) is connected: start sending what is queued."""
        # The sessions were attached again (a snapshot, or a replay of what was missed): their
        # chats say now whether a turn runs; a turn end lost with the old socket holds nothing.
        for key in [k for k in self._turn_marks if profile_id in (None, k[0])]:
            del self._turn_marks[key]
        self._offer_failed(profile_id)
        for e in self._store.outbox_entries(profile_id):
            self._kick(e.profile_id, e.session_key)

    async def flush(self, profile_id: str | None = None) -> None:
        """Send everything that can go now and wait until those workers are done."""
        self.on_online(profile_id)
        await self.idle()

    async def idle(self) -> None:
        while self._workers:
            await asyncio.gather(*list(self._workers.values()), return_exceptions=True)

    async def aclose(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for watches in (self._watches, self._settle_watches):
            for unwatch in watches.values():
                unwatch()
            watches.clear()
        workers = list(self._workers.values()) + list(self._settling)
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)

    # -- reconcile --------------------------------------------------------------------------

    def reconcile(
        self,
        session_key: str,
        snapshot: Mapping[str, Any],
        history: Mapping[str, Any] | None = None,
        *,
        profile_id: str | None = None,
    ) -> ReconcileResult:
        """Settle UNCONFIRMED prompts of a session from its `session.activate` snapshot (or
        its `session.history`).

        A prompt is CONFIRMED when it is the snapshot's `inflight.user`, or a user row at or
        after its `history_mark`: a row position on a gateway that pages its history (the
        embedded one, whose page says its `offset`), else a count of user rows (0.19, 0.20.1
        and 0.22 list tool rows, and their `count`/`message_count` are raw row counts, so
        only user rows are counted the same way on both sides). It FAILS with "delivery not
        confirmed" and goes back to the composer only when the rows are the whole history
        and provably lack it, unless the gateway de-duplicates refs (then it is re-sent).

        An omitted snapshot (`messages_omitted`, 0.20.1 and 0.22), one without messages or a
        partial one (`history_start`) proves nothing: its prompts stay unresolved, for
        `session.history` to settle.
        """
        result = ReconcileResult()
        waiting = [
            e
            for e in self._store.outbox_entries(profile_id, session_key)
            if e.state is DeliveryState.UNCONFIRMED and e.submission_ref not in self._sending
        ]
        if not waiting:
            return result
        inflight = snapshot.get("inflight") or {}
        inflight_user = inflight.get("user") if isinstance(inflight, Mapping) else None
        rows, base = _rows_of(snapshot, history)
        known = rows is not None
        by_user = _by_user_rows(self._dialect(waiting[0].profile_id)) and base == 0
        marked: list[tuple[int, str]] = []
        if rows is not None:
            users = [(base + i, _row_text(m)) for i, m in enumerate(rows) if _is_user(m)]
            marked = [(n, text) for n, (_, text) in enumerate(users)] if by_user else users
        # While the turn may still be starting, a prompt absent from the rows is not proof.
        still_running = snapshot.get("running") is True and inflight_user is None
        used: set[int] = set()
        for entry in waiting:
            if isinstance(inflight_user, str) and _same(inflight_user, entry.text):
                inflight_user = None  # one in-flight turn confirms one prompt
                result.confirmed.append(self._confirm(entry))
                continue
            match = copy_at(marked, entry.text, entry.history_mark, used)
            if match is not None:
                used.add(match)
                result.confirmed.append(self._confirm(entry))
            elif (
                known
                and (by_user or entry.history_mark >= base)
                and not still_running
                and not self._dedup(entry.profile_id)
            ):
                result.failed.append(self._fail(entry, NOT_CONFIRMED))
            else:
                result.unresolved.append(entry)
        for entry in waiting:
            self._kick(entry.profile_id, entry.session_key)
        return result

    async def reconcile_via(self, profile_id: str, session_key: str) -> ReconcileResult:
        """Fetch the session's snapshot (and history when needed) and reconcile with them.

        The session is attached by the profile's port (the session router: activate, on 4001
        resume), which adopts a new runtime id so the replies that follow show at once. The
        history is asked without `offset`/`limit` unless the gateway pages (`history_window`):
        0.22 refuses them, 0.19 and 0.20.1 ignore them. A prompt still unresolved while the
        session runs is settled again when that turn ends.
        """
        port = self._port(profile_id)
        if port is None:
            raise NotConnectedError(f"profile {profile_id} is not connected")
        hint = self._known_runtime(profile_id, session_key)
        try:
            snapshot = await port.reattach(session_key, hint)
        except RpcError as exc:
            if exc.code != SESSION_NOT_FOUND:
                raise
            snapshot = None
        if snapshot is None:
            return self._fail_session(session_key, profile_id)
        result = self.reconcile(session_key, snapshot, profile_id=profile_id)
        if not result.unresolved:
            return result
        runtime_id = str(snapshot.get("session_id") or hint)
        history = await port.call(
            SESSION_HISTORY, {"session_id": runtime_id}, timeout=self.call_timeout
        )
        # The history of a running session (its snapshot says so) may not hold the prompt yet.
        running = {"running": True} if snapshot.get("running") is True else {}
        second = self.reconcile(session_key, running, history, profile_id=profile_id)
        result.confirmed += second.confirmed
        result.failed += second.failed
        result.unresolved = second.unresolved
        if result.unresolved and running:
            self._settle_after_turn(port, profile_id, session_key)
        return result

    def _settle_after_turn(self, port: GatewayPort, profile_id: str, session_key: str) -> None:
        """Reconcile the session again once its running turn has ended."""
        key = (profile_id, session_key)
        state = port.turn_state(session_key)
        if state is None or key in self._settle_watches:
            return
        ended = state[1]

        def news() -> None:
            now = port.turn_state(session_key)
            if now is not None and now[1] <= ended:
                return
            unwatch = self._settle_watches.pop(key, None)
            if unwatch is not None:
                unwatch()
            task = asyncio.get_running_loop().create_task(self._settle_again(*key))
            self._settling.add(task)
            task.add_done_callback(self._settling.discard)

        unwatch = port.watch(session_key, news)
        if unwatch is not None:
            self._settle_watches[key] = unwatch

    async def _settle_again(self, profile_id: str, session_key: str) -> None:
        try:
            await self.reconcile_via(profile_id, session_key)
        except GatewayError as exc:
            log.info("settling %s again failed: %s", session_key, exc)  # the next connect does

    # -- workers ----------------------------------------------------------------------------

    def _port(self, profile_id: str) -> GatewayPort | None:
        return self._ports(profile_id)

    def _dialect(self, profile_id: str) -> Dialect | None:
        port = self._port(profile_id)
        return port.dialect if port is not None else None

    def _dedup(self, profile_id: str) -> bool:
        caps = self._dialect(profile_id)
        return bool(caps is not None and caps.submission_ref)

    def _kick(self, profile_id: str, session_key: str) -> None:
        key = (profile_id, session_key)
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        if key in self._workers:
            return  # the running worker re-reads the queue before each entry
        if self._holds(session_key):
            return  # released with another kick once the session exists
        port = self._port(profile_id)
        if port is None or not port.is_online():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop yet: on_online()/flush() will start it
        self._workers[key] = loop.create_task(
            self._work(profile_id, session_key), name=f"outbox:{session_key}"
        )

    def _retry_later(self, entry: OutboxEntry) -> None:
        key = (entry.profile_id, entry.session_key)
        # The count is the entry's own (persisted): a restart goes on along the schedule.
        delay = self._retry.delay(max(0, entry.attempts - 1))
        self._timers[key] = self._clock.call_later(
            delay, lambda: self._kick(entry.profile_id, entry.session_key)
        )

    async def _work(self, profile_id: str, session_key: str) -> None:
        try:
            while True:
                entry = self._next(profile_id, session_key)
                if entry is None:
                    return
                port = self._port(profile_id)
                if port is None or not port.is_online():
                    return
                if entry.state is DeliveryState.PENDING and self._hold(port, entry):
                    return  # sent once the running turn ends (the watch kicks the worker)
                if not await self._deliver(port, entry):
                    return
        finally:
            self._workers.pop((profile_id, session_key), None)

    def _busy(self, port: GatewayPort, profile_id: str, session_key: str) -> bool:
        """A turn runs in the session: one the gateway reports, or our last prompt's, whose
        end has not been seen yet (its message.start may still be on its way)."""
        state = port.turn_state(session_key)
        if state is None:
            return False
        running, ended = state
        key = (profile_id, session_key)
        mark = self._turn_marks.get(key)
        if running or mark is None or ended > mark.ended:
            return running
        if not mark.started and self._clock.monotonic() - mark.written_at > TURN_START_GRACE:
            # Its turn never showed a start: it ran unseen (its events lost) or not at all. A
            # hold with nothing left to end it would keep the next prompt for ever.
            self._turn_marks.pop(key, None)
            return False
        return True

    def _hold(self, port: GatewayPort, entry: OutboxEntry) -> bool:
        """Keep a prompt while its session's turn runs; True when it was held."""
        key = (entry.profile_id, entry.session_key)
        if not self._busy(port, *key):
            if entry.error == HELD:
                self._note(entry, "")
            return False
        if entry.error != HELD:
            self._note(entry, HELD)
        if key not in self._watches:
            unwatch = port.watch(entry.session_key, lambda: self._on_turn_news(port, key))
            if unwatch is None:
                return False  # the chat is not followed: nothing would ever release it
            self._watches[key] = unwatch
        mark = self._turn_marks.get(key)
        if mark is not None and not mark.started and key not in self._timers:
            # Looked at again once the grace for its turn to start has passed.
            left = mark.written_at + TURN_START_GRACE - self._clock.monotonic()
            self._timers[key] = self._clock.call_later(
                max(0.0, left) + 0.001, lambda: self._on_turn_news(port, key)
            )
        return True

    def _on_turn_news(self, port: GatewayPort, key: tuple[str, str]) -> None:
        mark = self._turn_marks.get(key)
        state = port.turn_state(key[1])
        if mark is not None and state is not None and state[0]:
            mark.started = True  # its turn is under way: it ends with a message.complete
        if self._busy(port, *key):
            return
        unwatch = self._watches.pop(key, None)
        if unwatch is not None:
            unwatch()
        self._kick(*key)

    def _note(self, entry: OutboxEntry, note: str) -> None:
        """Change the line under a pending prompt (held or not) and tell its bubble."""
        updated = self._store.outbox_update(entry.submission_ref, error=note)
        self._emit(self._state_listeners, updated or replace(entry, error=note))

    def _next(self, profile_id: str, session_key: str) -> OutboxEntry | None:
        for e in self._store.outbox_entries(profile_id, session_key):
            if e.state in (DeliveryState.PENDING, DeliveryState.UNCONFIRMED):
                # One offered as a steer keeps its place: those after it wait for its answer.
                return None if e.submission_ref in self._steering else e
        return None

    async def _deliver(self, port: GatewayPort, entry: OutboxEntry) -> bool:
        """Send one entry; True to go on with the session's next one, False to stop for now."""
        caps = port.dialect
        dedup = bool(caps is not None and caps.submission_ref)
        ambiguous = entry.state is DeliveryState.UNCONFIRMED or entry.wire >= Wire.SUBMITTED
        if ambiguous and not dedup:
            if entry.state is not DeliveryState.UNCONFIRMED:
                self._set(entry, state=DeliveryState.UNCONFIRMED)
            return False  # never replay on a gateway that would run it twice
        ref = entry.submission_ref
        prior_wire = entry.wire
        runtime_id = self._runtime_id(entry)
        self._sending.add(ref)
        try:
            # One persisted before the limit was checked (an older version) would close every
            # new connection (1009) at every start: it fails here instead, with the reason.
            too_large = prompt_too_large(entry.text)
            if too_large:
                raise _Fail(too_large)
            if entry.attachments:
                # Checked against the gateway's limits first: one refused attachment must not
                # leave the ones before it staged, to ride along with the next prompt.
                if len(entry.attachments) > MAX_ATTACHMENTS:
                    raise _Fail(f"a message can carry at most {MAX_ATTACHMENTS} attachments")
                methods = [_attach_method(att, caps) for att in entry.attachments]
                if entry.wire >= Wire.STAGED:
                    await self._clear_staged(port, runtime_id)
                entry = self._set(entry, wire=max(entry.wire, Wire.STAGED))
                for att, method in zip(entry.attachments, methods, strict=True):
                    attach = {
                        "session_id": runtime_id,
                        "content_base64": base64.b64encode(_read(att)).decode("ascii"),
                        "filename": att.filename,
                    }
                    await port.call(method, attach, timeout=self.call_timeout)
            marks = self._marks_before_write(port, entry, caps)
            entry = self._set(entry, wire=Wire.SUBMITTED, attempts=entry.attempts + 1, **marks)
            # `queued`: should the session be busy after all (another client's turn), 0.20.1
            # and 0.22 run this as its own turn instead of folding it into the running one.
            # 0.19 and the embedded gateway ignore it; a gateway refusing it (4000) has it
            # left out by the client.
            params: dict[str, Any] = {"session_id": runtime_id, "text": entry.text, "queued": True}
            if dedup:
                params["submission_ref"] = ref
            params.update(self._rewinds.get(ref, {}))
            await port.call(PROMPT_SUBMIT, params, timeout=self.call_timeout)
        except (ConnectionLostError, CallTimeoutError) as exc:
            if entry.wire < Wire.SUBMITTED:
                self._set(entry, error=str(exc))  # only staging was cut: still just pending
            else:
                entry = self._set(entry, state=DeliveryState.UNCONFIRMED, error=str(exc))
            if (dedup or entry.wire < Wire.SUBMITTED) and port.is_online():
                self._retry_later(entry)
            return False
        except NotConnectedError:
            # The failing call was never written; an earlier attempt may still have been.
            self._set(entry, wire=max(prior_wire, _staged(entry)))
            return False
        except RpcError as exc:
            # A definite answer: this attempt's prompt did not run (so no turn of it ends).
            self._turn_marks.pop((entry.profile_id, entry.session_key), None)
            if entry.attachments and entry.wire >= Wire.STAGED:
                # What this attempt staged would go with the session's next prompt.
                await self._clear_refused(port, runtime_id)
            self._set(entry, wire=max(prior_wire, _staged(entry)))
            return await self._on_rpc_error(entry, exc)
        except (AttachmentError, _Fail) as exc:
            self._fail(entry, str(exc))
            return True
        finally:
            self._sending.discard(ref)
        self._confirm(entry)
        return True

    def _marks_before_write(
        self, port: GatewayPort, entry: OutboxEntry, caps: Dialect | None
    ) -> dict[str, Any]:
        """Recorded right before prompt.submit is written: where its turn ends, and where its
        user row can be in the gateway's history (see `reconcile`)."""
        key = (entry.profile_id, entry.session_key)
        state = port.turn_state(entry.session_key)
        if state is None:
            self._turn_marks.pop(key, None)
        else:
            self._turn_marks[key] = _TurnMark(state[1], self._clock.monotonic())
        if not _by_user_rows(caps):
            return {}  # a paging gateway: the mark is a row position, set when queued
        return {"history_mark": self._user_rows(port, entry)}

    def _user_rows(self, port: GatewayPort, entry: OutboxEntry) -> int:
        """User rows the gateway holds before this prompt: what the chat shows of them, or the
        local cache when the chat is not loaded (a low count can only let an older identical
        prompt pass for this one; a high one would restore a prompt that ran)."""
        known = port.user_rows(entry.session_key)
        if known is not None:
            return known
        cached = self._store.messages(entry.profile_id, entry.session_key)
        return sum(1 for m in cached if m.role == "user")

    async def _on_rpc_error(self, entry: OutboxEntry, exc: RpcError) -> bool:
        entry = self._store.outbox_get(entry.submission_ref) or entry
        if exc.code == SESSION_BUSY:
            self._retry_later(entry)
            return False
        if exc.code == SESSION_NOT_FOUND and entry.submission_ref not in self._resumed:
            self._resumed.add(entry.submission_ref)
            try:
                runtime_id = await self._resume(entry)
            except GatewayError as lost:
                # The connection went while resuming: the prompt did not run (4001 said so),
                # so it stays queued and is resumed again once the connection is back.
                self._resumed.discard(entry.submission_ref)
                entry = self._set(entry, error=str(lost))
                port = self._port(entry.profile_id)
                if port is not None and port.is_online():
                    self._retry_later(entry)
                return False
            if runtime_id is not None:
                self._retarget(entry.profile_id, entry.session_key, runtime_id)
                return True  # the worker picks the entry up again with the new runtime id
        if exc.code in (SESSION_NOT_FOUND, RESUME_TARGET_NOT_FOUND):
            self._fail(entry, SESSION_GONE)
            return True
        self._fail(entry, exc.message or str(exc))
        return True

    async def _resume(self, entry: OutboxEntry) -> str | None:
        """The session router resumes the session (and follows its new runtime id); None when
        the gateway no longer has it. A lost connection is raised (a GatewayError)."""
        port = self._port(entry.profile_id)
        if port is None:
            return None
        try:
            return await port.resume(entry.session_key)
        except RpcError:
            return None

    async def _clear_staged(self, port: GatewayPort, runtime_id: str) -> None:
        try:
            await port.call(
                ATTACHMENTS_CLEAR, {"session_id": runtime_id}, timeout=self.call_timeout
            )
        except RpcError as exc:
            if exc.code != METHOD_NOT_FOUND:
                raise

    async def _clear_refused(self, port: GatewayPort, runtime_id: str) -> None:
        """Clear what a refused submit staged; a lost link leaves it to the next attempt's
        clear (an UNCONFIRMED or retried entry clears before staging again)."""
        try:
            await self._clear_staged(port, runtime_id)
        except GatewayError as exc:
            log.info("could not clear refused attachments: %s", exc)

    def _runtime_id(self, entry: OutboxEntry) -> str:
        cached = self._store.session(entry.profile_id, entry.session_key)
        if cached is not None and cached.runtime_id:
            return cached.runtime_id
        return entry.runtime_id

    def _known_runtime(self, profile_id: str, session_key: str) -> str:
        """The runtime id last recorded for the session (by the router, or with its prompts)."""
        entries = self._store.outbox_entries(profile_id, session_key)
        if entries:
            return self._runtime_id(entries[0])
        cached = self._store.session(profile_id, session_key)
        return cached.runtime_id or "" if cached is not None else ""

    # -- settling ---------------------------------------------------------------------------

    def _recover(self) -> None:
        """After a restart, a prompt that may have been written is ambiguous, not pending."""
        for e in self._store.outbox_entries():
            if e.state is DeliveryState.PENDING and e.wire >= Wire.SUBMITTED:
                self._store.outbox_update(
                    e.submission_ref,
                    state=DeliveryState.UNCONFIRMED,
                    error="the app stopped while sending",
                )

    def _set(self, entry: OutboxEntry, **fields: Any) -> OutboxEntry:
        updated = self._store.outbox_update(entry.submission_ref, **fields)
        if updated is None:
            return replace(entry, **fields)
        if "state" in fields and fields["state"] is not entry.state:
            self._emit(self._state_listeners, updated)
        return updated

    def _confirm(self, entry: OutboxEntry) -> OutboxEntry:
        done = self._set(entry, state=DeliveryState.CONFIRMED, error="")
        self._rewinds.pop(entry.submission_ref, None)
        self._store.outbox_delete(entry.submission_ref)
        self._emit(self._removed_listeners, done)
        return done

    def _fail(self, entry: OutboxEntry, message: str) -> OutboxEntry:
        # It did not run: no turn of it will end, the session's next prompt need not wait.
        self._turn_marks.pop((entry.profile_id, entry.session_key), None)
        failed = self._set(entry, state=DeliveryState.FAILED, error=message)
        self._give_back(failed)
        return failed

    def _give_back(self, entry: OutboxEntry) -> None:
        """Offer a failed prompt to the composer; drop the entry only once it is kept."""
        answers: list[bool | None] = []
        failed = self._restore_listeners.emit(
            entry, lambda listener: answers.append(listener(entry))
        )
        if failed:
            log.warning("restoring %s failed; it stays queued", entry.submission_ref)
        if answers and not failed and False not in answers:
            self._store.outbox_delete(entry.submission_ref)
            self._emit(self._removed_listeners, entry)

    def _offer_failed(self, profile_id: str | None) -> None:
        for e in self._store.outbox_entries(profile_id):
            if e.state is DeliveryState.FAILED:
                self._give_back(e)

    def _fail_session(self, session_key: str, profile_id: str | None) -> ReconcileResult:
        result = ReconcileResult()
        for e in self._store.outbox_entries(profile_id, session_key):
            if e.submission_ref not in self._sending:
                result.failed.append(self._fail(e, SESSION_GONE))
        return result

    def _queued(self, ref: str) -> OutboxEntry:
        entry = self._store.outbox_get(ref)
        if entry is None:
            raise OutboxError("that message is no longer queued")
        if not self._editable(entry):
            raise OutboxError("that message is already being sent and can no longer be changed")
        return entry

    def _editable(self, entry: OutboxEntry) -> bool:
        """No byte of it is on its way: it can still be edited, moved, steered or cancelled."""
        ref = entry.submission_ref
        return (
            ref not in self._sending
            and ref not in self._steering
            and entry.state is DeliveryState.PENDING
            and entry.wire == Wire.NOTHING
        )

    @staticmethod
    def _emit(listeners: _ByProfile[StateListener], entry: OutboxEntry) -> None:
        # A broken view must not stop delivery: Observers logs a failing listener, goes on.
        listeners.emit(entry, lambda listener: listener(entry))


class _ByProfile(Generic[L]):
    """Observers by the profile whose entries they hear of (None: every profile's)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._observers: dict[str | None, Observers[L]] = {}

    def add(self, profile_id: str | None, listener: L) -> Unsubscribe:
        observers = self._observers.get(profile_id)
        if observers is None:
            observers = self._observers[profile_id] = Observers(self._name)
        return observers.subscribe(listener)

    def emit(self, entry: OutboxEntry, call: Callable[[L], object]) -> int:
        """`call(listener)` for every listener of the entry's profile; how many raised."""
        failed = 0
        for profile_id in (None, entry.profile_id):
            observers = self._observers.get(profile_id)
            if observers is not None:
                failed += observers.emit(call)
        return failed


def _by_user_rows(caps: Dialect | None) -> bool:
    """Whether history marks count user rows (a gateway that sends its whole history) or
    are row positions (one that pages it, `history_window`)."""
    return caps is not None and not caps.history_window


def _rows_of(
    snapshot: Mapping[str, Any], history: Mapping[str, Any] | None
) -> tuple[list[Any] | None, int]:
    """The rows that can prove a prompt ran, and the position of the first; None: unknown."""
    if history is not None:
        rows = history.get("messages")
        first = history.get("offset")
        base = first if isinstance(first, int) and not isinstance(first, bool) else 0
        return (rows, base) if isinstance(rows, list) else (None, 0)
    rows = snapshot.get("messages")
    start = snapshot.get("history_start")
    partial = isinstance(start, int) and not isinstance(start, bool) and start > 0
    if snapshot.get("messages_omitted") is True or partial or not isinstance(rows, list):
        return None, 0
    return rows, 0


def _is_user(row: Any) -> bool:
    return isinstance(row, Mapping) and row.get("role") == "user"


def _row_text(row: Mapping[str, Any]) -> str:
    text = row.get("text", row.get("content", ""))
    return text if isinstance(text, str) else ""


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def copy_at(
    rows: Iterable[tuple[int, str]], text: str, history_mark: int, used: Container[int] = ()
) -> int | None:
    """Where the gateway's copy of prompt `text` stands among user `rows` (position, text):
    the first row at or after the `history_mark` recorded when the prompt was queued (an older
    identical prompt cannot be its copy), not `used` by another prompt, with the same words
    (white space aside). None: no copy there. The one rule for "is this prompt there", used by
    reconciliation here and by the prompt bubbles on screen."""
    return next(
        (i for i, row in rows if i >= history_mark and i not in used and _same(row, text)),
        None,
    )


def _staged(entry: OutboxEntry) -> int:
    """The wire mark after an attempt whose prompt.submit was not written."""
    return min(entry.wire, Wire.STAGED if entry.attachments else Wire.NOTHING)


def _attach_method(att: Attachment, caps: Dialect | None) -> str:
    """The attach method for one attachment; `_Fail` when the gateway would refuse it."""
    if is_image(att):
        return IMAGE_ATTACH_BYTES
    if caps is None or not caps.file_attachments:
        raise _Fail(f"this gateway does not accept file attachments ({att.filename})")
    if att.size > MAX_INLINE_TEXT_BYTES and is_inline_text(_read(att)):
        raise _Fail(
            f"{att.filename} is a text file of {att.size // 1024} KiB; text files can be at "
            f"most {MAX_INLINE_TEXT_BYTES // 1024} KiB"
        )
    return FILE_ATTACH_BYTES


def _read(att: Attachment) -> bytes:
    try:
        return _read_local(att.path)
    except OSError as exc:
        raise _Fail(f"{att.filename}: the attachment's stored copy is missing") from exc


def _read_local(path: str) -> bytes:
    """A local file of at most the attachment limit: brief enough to read on the loop."""
    with open(path, "rb") as fh:
        return fh.read()
