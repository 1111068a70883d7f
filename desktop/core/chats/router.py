"""Session routing over a supervisor: runtime/stored ids, replay, and the one home of session
activation (`session.activate`, on 4001 `session.resume`), after every reconnect too."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from desktop.common.codes import (
    FRAME_TOO_LARGE,
    METHOD_NOT_FOUND,
    RESUME_TARGET_NOT_FOUND,
    SESSION_NOT_FOUND,
)
from desktop.common.methods import (
    SESSION_ACTIVATE,
    SESSION_BRANCH,
    SESSION_CREATE,
    SESSION_EVENTS_SINCE,
    SESSION_HISTORY,
    SESSION_RECLAIMED_EVENT,
    SESSION_RESUME,
)
from desktop.core.chats.branch_point import branch_count, matching_bubble
from desktop.core.chats.conversation import Conversation
from desktop.core.errors import (
    CLOSE_TOO_BIG,
    BranchError,
    BranchUnsupported,
    ConnectionLostError,
    GatewayError,
    HermesQtError,
    RpcError,
)
from desktop.core.jobs import Jobs
from desktop.core.link.protocol import Event
from desktop.core.link.supervisor import ConnectionSupervisor
from desktop.core.models import ConnectionState, ConnectionStatus
from desktop.core.observers import Observers

log = logging.getLogger(__name__)

# Messages a snapshot carries, and a page of older ones, on gateways that page their history:
# a 100,000-message session opens as fast, and in as little memory, as a short one.
HISTORY_WINDOW = 200
HISTORY_PAGE = 200
# Bubbles of a long history held at most while scrolling through it (a few dozen screens):
# past that, those farthest from where the user reads are dropped and fetched again when
# scrolled back to, so memory stays bounded however far back the user goes.
HISTORY_HELD = 1200

# stored id, runtime id: called whenever the pair is learned or the runtime id changes.
IdSink = Callable[[str, str], None]
# stored id, human-readable reason: the gateway no longer knows this session.
GoneSink = Callable[[str, str], None]
# stored id, snapshot dict (activate / resume / create result).
SnapshotListener = Callable[[str, dict[str, Any]], None]
# stored id ("" when not one session's), the error of this computer's side (a disk error).
FailureListener = Callable[[str, HermesQtError], None]


@dataclass(slots=True)
class RoutedSession:
    """One session this client shows; keyed by its durable stored id."""

    stored_id: str
    runtime_id: str | None
    conversation: Conversation
    gone: bool = False
    # While a (re)activation or catch-up is in flight, live events wait here.
    pending: bool = False
    buffered: list[Event] = field(default_factory=list)
    # Legacy rebuild: deltas racing the snapshot may already be inside it.
    overlap_guard: bool = False
    # Its snapshot closes the socket (a frame over our limit): never asked for again.
    blocked: bool = False
    # False for a session asked about once (the outbox's, not on screen): not followed.
    followed: bool = True
    # The history shown is not known to be the gateway's (never loaded, or its last fetch
    # failed): the next reattachment loads it rather than replaying events onto it.
    history_stale: bool = True


class SnapshotTooLargeError(ConnectionLostError):
    """The socket closed on a frame over our limit while this session's snapshot was due.

    `alone` says it was the only snapshot in flight, so the frame was surely its own.
    """

    def __init__(self, reason: str, *, alone: bool) -> None:
        super().__init__(reason, code=CLOSE_TOO_BIG)
        self.alone = alone


def omits_messages(snapshot: dict[str, Any]) -> bool:
    """Whether a snapshot's `messages` leave the history out (asked with `omit_messages`).

    0.20.1 and 0.22 say `messages_omitted: true` with `messages: []`; the embedded gateway
    sends no `messages` at all; 0.19 ignores the flag and sends the real list (no key). An
    empty list beside a positive `message_count` is an omitted history whatever the flags.
    `message_count` is only a hint: it counts raw rows, not the entries of `messages`.
    """
    messages = snapshot.get("messages")
    if not isinstance(messages, list) or snapshot.get("messages_omitted") is True:
        return True
    count = snapshot.get("message_count")
    return not messages and _is_int(count) and count > 0


def too_large_message(reason: str) -> str:
    """What the chat says instead of its history when the history cannot be received."""
    return (
        "This chat's history could not be loaded: the gateway sent it as one message larger "
        f"than this app accepts ({reason}). Your other chats keep working; this one is not "
        "requested again until the app restarts."
    )


# Why Branch from here is greyed on a gateway that answered so (`BranchUnsupported.limit`).
BRANCH_NOT_SERVED = "this gateway cannot branch a chat (it has no session.branch)"
BRANCH_NOT_KEPT = (
    "this gateway makes a branch of the whole chat without saying its stored id, "
    "so the branch could not be kept"
)


class SessionRouter:
    """Keeps each routed session attached across reconnects, exactly once per reconnect.

    After every ONLINE it sends one `session.activate` per session (or `session.resume` by
    stored id when the runtime id is gone), then either replays missed events by seq (gateways
    with `event_replay`) or rebuilds the in-progress reply from the snapshot (legacy 0.19).
    """

    def __init__(
        self,
        supervisor: ConnectionSupervisor,
        *,
        on_ids: IdSink | None = None,
        on_gone: GoneSink | None = None,
        now: Callable[[], float] | None = None,
    ) -> None:
        self._sup = supervisor
        self._on_ids = on_ids
        self._on_gone = on_gone
        self._now = now
        self._sessions: dict[str, RoutedSession] = {}
        self._by_runtime: dict[str, str] = {}
        self._replay_epoch: str | None = None
        self._epoch = 0
        self._jobs = Jobs("session router", lambda exc: self._failed("", exc))
        self._closed = False
        # Snapshot or history calls in flight per session, and who was loading when a socket
        # closed on a frame too big (per supervisor epoch): the culprit is among them.
        self._loading: Counter[str] = Counter()
        self._too_big: dict[int, frozenset[str]] = {}
        # Sessions that were loading when such a frame came: reactivated one at a time.
        self._suspects: set[str] = set()
        self.activations = 0  # session.activate calls sent (diagnostics, tests)
        # The supervisor epoch whose reactivation has finished: every routed session is live.
        self.synced_epoch = 0
        self._synced_listeners: Observers[Callable[[int], None]] = Observers("synced")
        self._snapshot_listeners: Observers[SnapshotListener] = Observers("snapshot")
        self._failure_listeners: Observers[FailureListener] = Observers("router failure")
        self._unsubs = [
            supervisor.add_status_listener(self._on_supervisor_status),
            supervisor.subscribe(self._on_supervisor_event),
        ]

    # -- routing -------------------------------------------------------------------------

    def route(self, stored_id: str, runtime_id: str | None = None) -> Conversation:
        """Start following a session; returns its conversation (existing one if routed)."""
        routed = self._sessions.get(stored_id)
        if routed is None:
            routed = RoutedSession(stored_id, None, Conversation(stored_id, now=self._now))
            self._sessions[stored_id] = routed
        if runtime_id:
            self._adopt_runtime(routed, runtime_id)
        return routed.conversation

    def unroute(self, stored_id: str) -> None:
        routed = self._sessions.pop(stored_id, None)
        if routed is not None and routed.runtime_id:
            self._by_runtime.pop(routed.runtime_id, None)

    def session(self, stored_id: str) -> RoutedSession | None:
        return self._sessions.get(stored_id)

    def conversation(self, stored_id: str) -> Conversation | None:
        routed = self._sessions.get(stored_id)
        return routed.conversation if routed else None

    def runtime_id(self, stored_id: str) -> str | None:
        routed = self._sessions.get(stored_id)
        return routed.runtime_id if routed else None

    def key_for_runtime(self, runtime_id: str) -> str | None:
        """The routed session whose runtime id is `runtime_id`, if any."""
        key = self._by_runtime.get(runtime_id)
        routed = self._sessions.get(key) if key else None
        return key if routed is not None and routed.runtime_id == runtime_id else None

    @property
    def routed(self) -> list[str]:
        return list(self._sessions)

    def on_synced(self, listener: Callable[[int], None]) -> Callable[[], None]:
        """listener(epoch) once every routed session is reattached after a (re)connect."""
        return self._synced_listeners.subscribe(listener)

    def on_snapshot(self, listener: SnapshotListener) -> Callable[[], None]:
        """listener(stored id, snapshot) for every create/activate/resume snapshot received,
        once the session's conversation holds it (what is cached then is what is shown).

        Delivery uses it to settle uncertain submits: `inflight.user` or the last user row
        proves a prompt whose reply was lost did run.
        """
        return self._snapshot_listeners.subscribe(listener)

    def on_failure(self, listener: FailureListener) -> Callable[[], None]:
        """listener(stored id or "", error) when a job of the router fails on this computer's
        side (the store could not keep a runtime id). Not a connection problem: no reconnect
        retries it, so the user must hear of it. Gateway errors never reach this listener."""
        return self._failure_listeners.subscribe(listener)

    def _failed(self, stored_id: str, exc: HermesQtError) -> None:
        log.warning("session %s: %s", stored_id or "(all)", exc)
        self._failure_listeners.emit(lambda listener: listener(stored_id, exc))

    def _emit_snapshot(self, stored_id: str, snapshot: dict[str, Any]) -> None:
        self._snapshot_listeners.emit(lambda listener: listener(stored_id, snapshot))

    # -- explicit operations ---------------------------------------------------------------

    async def create(self, **params: Any) -> str:
        """session.create on the live gateway; routes the new session, returns its stored id."""
        result = await self._sup.call(SESSION_CREATE, params)
        runtime_id = str(result["session_id"])
        stored_id = str(result.get("stored_session_id") or result.get("session_key") or runtime_id)
        conv = self.route(stored_id, runtime_id)
        self._sessions[stored_id].history_stale = False  # new: its whole history is this
        conv.load_snapshot(result)
        self._emit_snapshot(stored_id, result)
        return stored_id

    async def branch(self, stored_id: str, message_id: str) -> tuple[str, dict[str, Any]]:
        """session.branch of a routed session, up to the end of the turn of its bubble
        `message_id`, counted on the gateway's own history (`branch_point`); routes the branch
        and returns its stored id and the gateway's answer. Raises BranchError when the
        message is not in that history, BranchUnsupported where the gateway cannot branch."""
        routed = self._sessions.get(stored_id)
        if routed is None or not routed.runtime_id:
            await self.open(stored_id)
            routed = self._sessions.get(stored_id)
        if routed is None or not routed.runtime_id:
            raise BranchError("the chat is not open on the gateway yet")
        params: dict[str, Any] = {"session_id": routed.runtime_id}
        count = await self._branch_count(routed, message_id)
        if count is not None:
            params["count"] = count
        try:
            result = await self._sup.call(SESSION_BRANCH, params)
        except RpcError as exc:
            if exc.code == METHOD_NOT_FOUND:
                raise BranchUnsupported(
                    "this gateway cannot branch a chat", BRANCH_NOT_SERVED
                ) from exc
            raise
        runtime_id = str(result.get("session_id") or "")
        branch_id = str(result.get("stored_session_id") or "")
        if not runtime_id or not branch_id:
            raise BranchUnsupported(
                "this gateway made the branch without saying its stored id; "
                "it shows in the chat list after the next refresh",
                BRANCH_NOT_KEPT,
            )
        conv = self.route(branch_id, runtime_id)
        self._sessions[branch_id].history_stale = not isinstance(result.get("messages"), list)
        conv.load_snapshot(result)
        self._emit_snapshot(branch_id, result)
        return branch_id, result

    async def _branch_count(self, routed: RoutedSession, message_id: str) -> int | None:
        """The count for session.branch that keeps the chat up to `message_id`'s turn."""
        conv = routed.conversation
        rows = await self._all_rows(routed, routed.runtime_id or "")
        rebuilt = conv.bubbles_of(rows)
        at = matching_bubble(conv.messages, message_id, rebuilt)
        position = None if at is None else conv.position_of(at)
        if position is None or not 0 <= position < len(rows):
            raise BranchError("that message is not in the gateway's history of this chat")
        return branch_count(rows, position)

    async def _all_rows(self, routed: RoutedSession, runtime: str) -> list[Any]:
        """Every history row of the session, however this gateway sends them."""
        dialect = self._sup.dialect
        if dialect is not None and dialect.history_window:
            return await self._rows(routed, runtime, 0, sys.maxsize)
        return await self._whole_history(routed, runtime) or []

    async def open(self, stored_id: str) -> Conversation:
        """Resume a stored session (e.g. picked from the list) and route it."""
        conv = self.route(stored_id)
        routed = self._sessions[stored_id]
        if routed.blocked:
            return conv
        epoch = self._sup.epoch
        try:
            snap = await self._resume(routed)
            if snap is not None and epoch == self._sup.epoch:
                snap, whole = await self._with_messages(routed, snap)
                if epoch == self._sup.epoch:
                    routed.conversation.load_snapshot(snap, keep_messages=not whole)
                    self._emit_snapshot(stored_id, snap)
        except SnapshotTooLargeError as exc:
            self._on_too_large(routed, exc)
        except RpcError as exc:
            if exc.code != FRAME_TOO_LARGE:
                raise
            self._on_refused_as_too_large(routed, exc)
        return conv

    async def reattach(self, stored_id: str, runtime_hint: str = "") -> dict[str, Any] | None:
        """Attach a session for the outbox: its snapshot (without messages), None when gone.

        The same "activate, on 4001 resume" as after a reconnect, so a new runtime id is
        adopted here and reported through `on_ids`. A session not routed (a prompt queued
        for a chat not on screen) is asked about once, by `runtime_hint`, and not followed.
        """
        return await self._activate(self._target(stored_id, runtime_hint))

    async def resume(self, stored_id: str) -> str | None:
        """The runtime id was refused (4001): resume by stored id; the new runtime id, or None
        when the gateway no longer has the session. Live events follow the new id at once."""
        routed = self._target(stored_id, "")
        snap = await self._resume(routed)
        return routed.runtime_id if snap is not None else None

    def _target(self, stored_id: str, runtime_hint: str) -> RoutedSession:
        routed = self._sessions.get(stored_id)
        if routed is not None:
            return routed
        conv = Conversation(stored_id, now=self._now)
        return RoutedSession(stored_id, runtime_hint or None, conv, followed=False)

    async def close(self) -> None:
        """Stop listening and cancel reactivations in flight."""
        self._closed = True
        for unsub in self._unsubs:
            unsub()
        await self._jobs.aclose()

    # -- supervisor hooks ----------------------------------------------------------------

    def _on_supervisor_status(self, status: ConnectionStatus) -> None:
        if self._closed:
            return
        if status.state is ConnectionState.ONLINE:
            self._epoch = status.epoch
            self._too_big = {}
            self._jobs.cancel()  # an older epoch's reactivation: superseded
            sessions = [s for s in self._sessions.values() if not s.gone and not s.blocked]
            for routed in sessions:
                # Hold live events from here on: the snapshot supersedes older buffered ones.
                routed.pending = True
                routed.buffered.clear()
            self._spawn(self._reactivate_all(status.epoch, sessions))

    def _on_supervisor_event(self, event: Any, epoch: int) -> None:
        if self._closed or not isinstance(event, Event):
            return
        if event.type == SESSION_RECLAIMED_EVENT:
            self._on_reclaimed(event.payload)
            return
        if not event.session_id:
            return
        key = self._by_runtime.get(event.session_id)
        routed = self._sessions.get(key) if key else None
        if routed is None:
            return
        if routed.pending:
            routed.buffered.append(event)
            return
        if self._has_gap(routed, event):
            routed.pending = True
            routed.buffered.append(event)
            self._spawn(self._catch_up(routed, epoch))
            return
        self._deliver(routed, event)

    def _on_reclaimed(self, payload: dict[str, Any]) -> None:
        """Hermes 0.22 unloaded an idle session (`session.reclaimed`, a broadcast): its runtime
        id is dead. Forget it, so the next use resumes by stored id at once instead of first
        failing an activate with 4001; nothing is resumed now (that would undo the unload)."""
        runtime = payload.get("session_id")
        stored = payload.get("stored_session_id")
        key = self._by_runtime.get(runtime) if isinstance(runtime, str) and runtime else None
        routed = self._sessions.get(key or (stored if isinstance(stored, str) else ""))
        if routed is None or not routed.runtime_id:
            return
        if isinstance(runtime, str) and runtime and routed.runtime_id != runtime:
            return  # an older runtime of this session: the current one lives
        reason = payload.get("reason")
        log.info("session %s was unloaded by the gateway (%s)", routed.stored_id, reason)
        self._by_runtime.pop(routed.runtime_id, None)
        routed.runtime_id = None
        # The runtime it is resumed as numbers its events from 1 again.
        routed.conversation.reset_watermark()

    # -- reactivation ----------------------------------------------------------------------

    async def _reactivate_all(self, epoch: int, sessions: list[RoutedSession]) -> None:
        dialect = self._sup.dialect
        replay = dialect is not None and dialect.event_replay
        new_epoch = dialect.replay_epoch if dialect is not None else None
        epoch_changed = (
            replay and new_epoch != self._replay_epoch and self._replay_epoch is not None
        )
        if replay:
            self._replay_epoch = new_epoch
        suspects = [s for s in sessions if s.stored_id in self._suspects]
        try:
            await asyncio.gather(
                *(
                    self._reactivate(s, epoch, replay, epoch_changed)
                    for s in sessions
                    if s.stored_id not in self._suspects
                )
            )
            for routed in suspects:
                # One at a time: if the socket closes on a frame too big now, it was this one.
                if epoch != self._sup.epoch:
                    break
                await self._reactivate(routed, epoch, replay, epoch_changed)
        finally:
            if epoch == self._sup.epoch:
                for routed in sessions:
                    self._flush(routed)
                self.synced_epoch = epoch
                self._synced_listeners.emit(lambda listener: listener(epoch))

    async def _reactivate(
        self, routed: RoutedSession, epoch: int, replay: bool, epoch_changed: bool
    ) -> None:
        conv = routed.conversation
        runtime = routed.runtime_id
        try:
            snap = await self._activate(routed)
            if snap is None or epoch != self._sup.epoch:
                return
            # Resumed under a new runtime id (reaped while detached): its events are numbered
            # from 1 again, so the old watermark would drop them all; rebuild from the snapshot.
            resumed = routed.runtime_id != runtime
            if epoch_changed or resumed:
                conv.reset_watermark()
            fresh = not conv.messages or bool(conv.load_error) or routed.history_stale
            if replay and not fresh and not epoch_changed and conv.last_seq > 0:
                complete = await self._replay(routed, epoch)
                if epoch != self._sup.epoch:
                    return
                if complete:
                    self._suspects.discard(routed.stored_id)
                    if snap.get("running") is not True:
                        conv.set_running(False)  # stale busy: the server is idle
                    # A question asked while offline is not replayed, only listed (0.22).
                    conv.adopt_requests(snap)
                    self._emit_snapshot(routed.stored_id, snap)
                    return
                conv.reset_watermark()
            snap, whole = await self._with_messages(routed, snap)
            if epoch != self._sup.epoch:
                return
            self._suspects.discard(routed.stored_id)
            conv.load_snapshot(snap, keep_messages=not whole)
            self._emit_snapshot(routed.stored_id, snap)
            routed.overlap_guard = not replay
        except SnapshotTooLargeError as exc:
            self._on_too_large(routed, exc)
        except RpcError as exc:
            if exc.code != FRAME_TOO_LARGE:
                log.info("reactivating %s failed: %s", routed.stored_id, exc)
                return
            self._on_refused_as_too_large(routed, exc)
        except GatewayError as exc:
            # Socket died mid-reactivation: the next ONLINE runs it again.
            log.info("reactivating %s failed: %s", routed.stored_id, exc)
        except HermesQtError as exc:
            # The disk, not the link: told now (the other sessions go on), never retried quietly.
            self._failed(routed.stored_id, exc)

    def _on_too_large(self, routed: RoutedSession, exc: SnapshotTooLargeError) -> None:
        key = routed.stored_id
        if not exc.alone:
            self._suspects.add(key)
            log.info("%s was loading when a frame too big closed the socket: retried alone", key)
            return
        routed.blocked = True
        self._suspects.discard(key)
        log.warning(
            "session %s: its snapshot is larger than the frame limit (%s); not loading it again",
            key,
            exc.reason,
        )
        routed.conversation.show_load_error(too_large_message(exc.reason))

    def _on_refused_as_too_large(self, routed: RoutedSession, exc: RpcError) -> None:
        # The gateway kept the link and said so; asking again later may work (nothing blocks).
        log.warning("session %s could not be loaded: %s", routed.stored_id, exc.message)
        routed.conversation.show_load_error(
            f"This chat's history could not be loaded: {exc.message}."
        )

    async def _load_call(self, routed: RoutedSession, method: str, params: dict[str, Any]) -> Any:
        """A call whose reply may be large (snapshot, history, replay), attributed if too big."""
        key = routed.stored_id
        epoch = self._sup.epoch
        self._loading[key] += 1
        try:
            return await self._sup.call(method, params)
        except ConnectionLostError as exc:
            if not exc.frame_too_large:
                raise
            # Every call pending on that socket fails at once; the first to get here records
            # who was loading then.
            culprits = self._too_big.setdefault(epoch, frozenset(self._loading))
            raise SnapshotTooLargeError(exc.reason, alone=culprits == {key}) from exc
        finally:
            self._loading[key] -= 1
            if self._loading[key] <= 0:
                del self._loading[key]

    async def _with_messages(
        self, routed: RoutedSession, snap: dict[str, Any]
    ) -> tuple[dict[str, Any], bool]:
        """`snap` with its history, and whether it has it (False: keep what is shown).

        A snapshot that omitted its messages (`omits_messages`) is never an empty history:
        the history is fetched the way this gateway allows. With `history_window` (the
        embedded gateway) only the last HISTORY_WINDOW of its `message_count` rows, paged by
        offset/limit (`history_start` says where they begin; older ones come as the user
        scrolls up). Any other gateway takes `session.history {session_id}` only and sends the
        whole history (0.22 refuses offset/limit; 0.19 and 0.20.1 ignore them), and its
        `message_count` counts raw rows, so it is no index there. When that fetch is refused,
        the history shown (and cached) stays and the next reattachment fetches it again.
        """
        if not omits_messages(snap):
            routed.history_stale = False
            return snap, True
        runtime = snap.get("session_id") or routed.runtime_id
        if not isinstance(runtime, str) or not runtime:
            return snap, False
        routed.history_stale = True  # until the fetch below succeeds
        dialect = self._sup.dialect
        total = snap.get("message_count")
        try:
            if dialect is not None and dialect.history_window and _is_int(total):
                first = max(0, total - HISTORY_WINDOW)
                rows: list[Any] | None = await self._rows(routed, runtime, first, total)
            else:
                first = 0
                rows = await self._whole_history(routed, runtime)
        except RpcError as exc:
            if exc.code == FRAME_TOO_LARGE:
                raise
            rows = None
            log.info("history of %s not loaded (%s): what is shown stays", routed.stored_id, exc)
        if rows is None:
            return snap, False
        routed.history_stale = False
        return {**snap, "messages": rows, "history_start": first, "messages_omitted": False}, True

    async def _whole_history(self, routed: RoutedSession, runtime: str) -> list[Any] | None:
        """`session.history` with nothing but the session id: all of it, or None."""
        page = await self._load_call(routed, SESSION_HISTORY, {"session_id": runtime})
        got = page.get("messages") if isinstance(page, dict) else None
        return got if isinstance(got, list) else None

    async def _activate(self, routed: RoutedSession) -> dict[str, Any] | None:
        if routed.runtime_id:
            self.activations += 1
            try:
                result = await self._load_call(
                    routed,
                    SESSION_ACTIVATE,
                    {"session_id": routed.runtime_id, "omit_messages": True},
                )
                return result if isinstance(result, dict) else {}
            except RpcError as exc:
                if exc.code != SESSION_NOT_FOUND:
                    raise
        return await self._resume(routed)

    async def _resume(self, routed: RoutedSession) -> dict[str, Any] | None:
        try:
            # omit_messages: the history is paged after (a gateway that ignores it sends it).
            result = await self._load_call(
                routed, SESSION_RESUME, {"session_id": routed.stored_id, "omit_messages": True}
            )
        except RpcError as exc:
            if exc.code == RESUME_TARGET_NOT_FOUND:
                routed.gone = True
                if self._on_gone is not None:
                    self._on_gone(routed.stored_id, exc.message or "session not found")
                return None
            raise
        if routed.followed and self._sessions.get(routed.stored_id) is not routed:
            return None  # unrouted (deleted) while the call was out: don't bring it back
        snap = result if isinstance(result, dict) else {}
        runtime_id = snap.get("session_id")
        if isinstance(runtime_id, str) and runtime_id:
            if routed.runtime_id and runtime_id != routed.runtime_id:
                # A new runtime numbers its events from 1 again: the old watermark would drop
                # them all (the reply to a prompt sent there would never show).
                routed.conversation.reset_watermark()
            self._adopt_runtime(routed, runtime_id)
        return snap

    async def _replay(self, routed: RoutedSession, epoch: int) -> bool:
        """Feed events missed while detached; False (nothing fed) when the replay cannot be
        trusted: the gateway's buffer lost some, or its numbering is not the one we hold.

        Two result shapes: the embedded gateway's `{events, complete, replay_epoch}` and
        0.22's `{events, latest_seq, truncated, count, epoch, open_requests}`.
        """
        conv = routed.conversation
        result = await self._load_call(
            routed,
            SESSION_EVENTS_SINCE,
            {"session_id": routed.runtime_id, "last_seen": conv.last_seq},
        )
        if epoch != self._sup.epoch or not isinstance(result, dict):
            return False
        named = result.get("epoch", result.get("replay_epoch"))
        if named is not None and str(named) != self._replay_epoch:
            return False  # numbered by another gateway process: our watermark means nothing
        if result.get("truncated") is True or result.get("complete") is False:
            return False  # a replay with holes: the snapshot and history rebuild it instead
        events = result.get("events")
        if not isinstance(events, list):
            return False
        for raw in events:
            if isinstance(raw, dict):
                conv.apply(_event_from(raw))
        return True

    async def _catch_up(self, routed: RoutedSession, epoch: int) -> None:
        try:
            if not await self._replay(routed, epoch) and epoch == self._sup.epoch:
                await self._reload(routed, epoch)
        except SnapshotTooLargeError as exc:
            self._on_too_large(routed, exc)
        except GatewayError as exc:
            log.info("catch-up for %s failed: %s", routed.stored_id, exc)
        except HermesQtError as exc:
            self._failed(routed.stored_id, exc)
        finally:
            if epoch == self._sup.epoch:
                self._flush(routed)

    async def _reload(self, routed: RoutedSession, epoch: int) -> None:
        """A gap the replay could not fill: the snapshot and history again, from scratch."""
        conv = routed.conversation
        routed.buffered.clear()  # older than the snapshot asked for now, which has them
        snap = await self._activate(routed)
        if snap is None or epoch != self._sup.epoch:
            return
        conv.reset_watermark()  # numbered from here on, as after a reconnect that rebuilds
        snap, whole = await self._with_messages(routed, snap)
        if epoch != self._sup.epoch:
            return
        conv.load_snapshot(snap, keep_messages=not whole)
        self._emit_snapshot(routed.stored_id, snap)

    async def load_older(self, stored_id: str, limit: int = HISTORY_PAGE) -> int:
        """Fetch the page of messages before the oldest one loaded; how many were added.

        Only gateways with `history_window` open a session with its last messages; with any
        other the whole history is loaded and there is nothing older to fetch. A chat shown
        from the local cache (offline, or before the gateway's history came) reads the page
        from there.
        """
        routed = self._sessions.get(stored_id)
        if routed is not None and routed.conversation.reads_cache:
            return routed.conversation.prepend_cached(limit)
        if routed is None or not routed.runtime_id:
            return 0
        conv = routed.conversation
        start = conv.history_start
        if start <= 0:
            return 0
        first = max(0, start - limit)
        rows = await self._rows(routed, routed.runtime_id, first, start)
        if conv.history_start != start or len(rows) != start - first:
            return 0  # a snapshot replaced the history meanwhile, or the page fell short
        return conv.prepend_history(rows, first)

    async def load_newer(self, stored_id: str, limit: int = HISTORY_PAGE) -> int:
        """Fetch the page of messages after the newest one loaded while the window is far up
        (its newer rows were dropped); how many bubbles the window gained (the live end too
        when the page reaches it); from the local cache in a chat shown from there."""
        routed = self._sessions.get(stored_id)
        if routed is not None and routed.conversation.reads_cache:
            return routed.conversation.append_cached(limit)
        if routed is None or not routed.runtime_id:
            return 0
        conv = routed.conversation
        gap = conv.gap
        if gap is None:
            return 0
        first, end = gap[0], min(gap[1], gap[0] + limit)
        rows = await self._rows(routed, routed.runtime_id, first, end)
        if conv.gap != gap or len(rows) != end - first:
            return 0  # a snapshot or reattach replaced the history meanwhile, or it fell short
        return conv.append_history(rows, first)

    async def _rows(self, routed: RoutedSession, runtime: str, first: int, end: int) -> list[Any]:
        """History rows `first`..`end` (exclusive) by `session.history` pages, each of which
        the gateway may cut short to fit a frame. Paged only with `history_window`: no other
        gateway takes offset/limit (0.22 refuses them), so there the rows come from the whole
        history."""
        dialect = self._sup.dialect
        if dialect is None or not dialect.history_window:
            whole = await self._whole_history(routed, runtime)
            return whole[first:end] if whole is not None else []
        rows: list[Any] = []
        while first + len(rows) < end:
            offset = first + len(rows)
            page = await self._load_call(
                routed,
                SESSION_HISTORY,
                {"session_id": runtime, "offset": offset, "limit": end - offset},
            )
            got = page.get("messages") if isinstance(page, dict) else None
            if not isinstance(got, list):
                break
            if not isinstance(page.get("offset"), int):
                return got[first:end]  # no paging here: this is the whole history
            if not got:
                break
            rows.extend(got)
        return rows[: end - first]

    # -- helpers -------------------------------------------------------------------------

    def _has_gap(self, routed: RoutedSession, event: Event) -> bool:
        dialect = self._sup.dialect
        if event.seq is None or dialect is None or not dialect.event_replay:
            return False
        last = routed.conversation.last_seq
        return last > 0 and event.seq > last + 1

    def _flush(self, routed: RoutedSession) -> None:
        routed.pending = False
        buffered, routed.buffered = routed.buffered, []
        for event in buffered:
            self._deliver(routed, event)

    def _deliver(self, routed: RoutedSession, event: Event) -> None:
        if routed.overlap_guard and event.seq is None and event.type == "message.delta":
            # 0.19 appends a delta to the snapshot before emitting it: a delta racing the
            # activate reply may already be in the rebuilt text. Check only that first one.
            routed.overlap_guard = False
            live = routed.conversation.streaming_message
            text = event.payload.get("text")
            if live is not None and isinstance(text, str) and text and live.text.endswith(text):
                return
        conv = routed.conversation
        conv.apply(event)
        if conv.resync_wanted and not routed.pending:
            self._resync(routed)

    def _resync(self, routed: RoutedSession) -> None:
        """Events came in an order no gateway sends (see Conversation.apply): catch up by
        replay from the last good seq, or, when the numbering started over, rebuild the chat
        from a snapshot; events arriving meanwhile wait and are applied after it."""
        conv = routed.conversation
        restart = conv.resync_wanted == "restart"
        conv.resync_wanted = ""
        routed.pending = True
        log.warning(
            "session %s: events out of order (%s); re-syncing it",
            routed.stored_id,
            "numbering started over" if restart else "impossible gap",
        )
        dialect = self._sup.dialect
        replay = not restart and dialect is not None and dialect.event_replay
        self._spawn(self._rebuild(routed, self._sup.epoch, replay=replay, restart=restart))

    async def _rebuild(
        self, routed: RoutedSession, epoch: int, *, replay: bool, restart: bool
    ) -> None:
        try:
            await self._reactivate(routed, epoch, replay=replay, epoch_changed=restart)
        finally:
            if epoch == self._sup.epoch:
                self._flush(routed)

    def _adopt_runtime(self, routed: RoutedSession, runtime_id: str) -> None:
        if routed.runtime_id == runtime_id:
            return
        if routed.runtime_id and routed.followed:
            self._by_runtime.pop(routed.runtime_id, None)
        routed.runtime_id = runtime_id
        if routed.followed:
            self._by_runtime[runtime_id] = routed.stored_id
        if self._on_ids is not None:
            self._on_ids(routed.stored_id, runtime_id)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        self._jobs.spawn(coro)


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _event_from(raw: dict[str, Any]) -> Event:
    payload = raw.get("payload")
    seq = raw.get("seq")
    session_id = raw.get("session_id")
    return Event(
        type=str(raw.get("type", "")),
        session_id=session_id if isinstance(session_id, str) else None,
        payload=payload if isinstance(payload, dict) else {},
        seq=seq if isinstance(seq, int) and not isinstance(seq, bool) else None,
        raw=raw,
    )
