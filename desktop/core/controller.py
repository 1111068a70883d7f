"""One profile's core controller: the Qt-free object behind a chat window's `ChatBackend`.

It joins the profile's supervisor and session router with the shared store, drafts, attachments
and outbox, keeps the session list, and turns all of their callbacks into listener calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import uuid
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from desktop.core.attachments import AttachmentStore
from desktop.core.clock import Clock
from desktop.core.conversation import Conversation
from desktop.core.drafts import DraftKeeper
from desktop.core.errors import GatewayError
from desktop.core.models import (
    ApprovalRequest,
    Attachment,
    ChatMessage,
    ConnectionState,
    ConnectionStatus,
    DeliveryState,
    Diagnostics,
    Draft,
    ReconnectRecord,
    Role,
    SessionSummary,
)
from desktop.core.outbox import Outbox
from desktop.core.sessions import SessionRouter
from desktop.core.storage import CachedMessage, OutboxEntry, StorageError, Store
from desktop.core.supervisor import ConnectionSupervisor

log = logging.getLogger(__name__)

TEMP_PREFIX = "new:"
# A turn that ends while its session is not on screen adds one unread mark.
_ENDED = {"message.complete", "error"}


def is_temp_key(key: str) -> bool:
    """A session typed into before the gateway created it."""
    return key.startswith(TEMP_PREFIX)


class SupervisorPort:
    """The outbox's view of one profile: online only once the routed sessions are re-attached."""

    def __init__(self, supervisor: ConnectionSupervisor, router: SessionRouter) -> None:
        self._sup = supervisor
        self._router = router

    @property
    def capabilities(self) -> Any:
        return self._sup.capabilities

    def is_online(self) -> bool:
        return (
            self._sup.status.state is ConnectionState.ONLINE
            and self._router.synced_epoch == self._sup.epoch
        )

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> Any:
        return await self._sup.call(method, params, timeout=timeout)


@dataclass(slots=True)
class _SessionState:
    """What the controller knows of a session beyond the store row."""

    summary: SessionSummary
    running: bool = False
    unread: int = 0
    # User bubbles that exist only here (queued, failed, restored): message id -> bubble.
    local: dict[str, ChatMessage] = field(default_factory=dict)


class ProfileController:
    """Implements the UI's `ChatBackend` for one profile (see desktop/ui/backend.py).

    Every callback reaches listeners on the asyncio thread. Intents return at once; their
    outcomes arrive through listener calls.
    """

    def __init__(
        self,
        *,
        profile_id: str,
        supervisor: ConnectionSupervisor,
        router: SessionRouter,
        store: Store,
        outbox: Outbox,
        drafts: DraftKeeper,
        attachments: AttachmentStore,
        clock: Clock,
    ) -> None:
        self._id = profile_id
        self._sup = supervisor
        self._router = router
        self._store = store
        self._outbox = outbox
        self._drafts = drafts
        self._attachments = attachments
        self._clock = clock
        self._listeners: list[Any] = []
        self._sessions: dict[str, _SessionState] = {}
        self._open_key: str | None = None
        self._conv_unsubs: dict[str, Callable[[], None]] = {}
        self._temp_convs: dict[str, Conversation] = {}
        self._creating: dict[str, asyncio.Task[str | None]] = {}
        # Temporary keys of created sessions -> their real keys, for intents still in flight.
        self._aliases: dict[str, str] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._snapshots: dict[str, dict[str, Any]] = {}
        self._shown: dict[str, int] = {}  # session key -> bubbles last sent whole to listeners
        self._closed = False
        self._unsubs: list[Callable[[], None]] = [
            supervisor.add_status_listener(self._on_supervisor_status),
            supervisor.subscribe(self._on_supervisor_event),
            router.on_synced(self._on_router_synced),
            router.on_snapshot(self._on_router_snapshot),
            outbox.on_state(self._on_outbox_state),
            outbox.on_removed(self._on_outbox_removed),
            outbox.on_restore(self._on_outbox_restore),
            drafts.on_save_state(self._on_drafts_save_state),
        ]
        for record in store.sessions(profile_id):
            self._sessions[record.key] = _SessionState(record.summary())
        # Drafts left by a previous run: the first load of each one is announced as restored.
        prefix = self._draft_key("")
        self._left_drafts = {
            d.session_key[len(prefix) :]
            for d in store.drafts()
            if d.session_key.startswith(prefix) and not d.empty
        }
        for entry in outbox.entries(profile_id):
            self._show_entry(entry)

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def profile_id(self) -> str:
        return self._id

    def start(self) -> None:
        self._sup.start()

    async def close(self) -> None:
        """Stop everything this controller started; the supervisor closes intentionally."""
        self._closed = True
        for unsub in self._unsubs:
            unsub()
        for unsub in self._conv_unsubs.values():
            unsub()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._router.close()
        await self._sup.close()

    # -- listeners -----------------------------------------------------------------------------

    def add_listener(self, listener: Any) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Any) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def _notify(self, method: str, *args: Any) -> None:
        for listener in list(self._listeners):
            callback = getattr(listener, method, None)
            if callback is None:
                continue
            try:
                callback(*args)
            except Exception:
                log.exception("listener %s failed", method)

    # -- snapshots -----------------------------------------------------------------------------

    def status(self) -> ConnectionStatus:
        return self._sup.status

    def sessions(self) -> list[SessionSummary]:
        items = [
            replace(s.summary, running=s.running, unread=s.unread) for s in self._sessions.values()
        ]
        items.sort(key=lambda s: s.updated_at, reverse=True)
        return items

    def diagnostics(self) -> Diagnostics:
        diag = self._sup.diagnostics()
        caps = self._sup.capabilities
        dialect = ""
        if caps is not None:
            if getattr(caps, "submission_ref", False):
                dialect = "embedded"
            elif getattr(caps, "heartbeat", False):
                dialect = "current"
            else:
                dialect = "legacy"
        return Diagnostics(
            epoch=diag.epoch,
            generation=diag.generation,
            dialect=dialect,
            last_inbound_age=diag.last_inbound_age,
            heartbeat_rtts=tuple(diag.rtt_samples),
            reconnects=tuple(ReconnectRecord(at, reason) for at, reason in diag.reasons),
        )

    # -- sessions ------------------------------------------------------------------------------

    def create_session(self) -> str:
        key = f"{TEMP_PREFIX}{uuid.uuid4().hex}"
        now = self._clock.wall()
        self._sessions[key] = _SessionState(
            SessionSummary(key=key, title="New chat", updated_at=now)
        )
        self._temp_convs[key] = conv = Conversation(key, now=self._clock.wall)
        self._watch(key, conv)
        self._emit_sessions()
        if self._port_online():
            self._ensure_created(key)
        return key

    def open_session(self, key: str) -> list[ChatMessage]:
        key = self._aliases.get(key, key)
        self._open_key = key
        state = self._sessions.get(key)
        if state is not None and state.unread:
            state.unread = 0
            self._emit_sessions()
        conv = self._conversation(key)
        if conv is not None and conv.messages:
            return self._view(key, conv.messages)
        cached = [self._from_cache(key, m) for m in self._store.messages(self._id, key)]
        if not is_temp_key(key) and conv is None:
            self._spawn(self._open_remote(key))
        return self._view(key, cached)

    async def _open_remote(self, key: str) -> None:
        conv = self._router.route(key, self._runtime_hint(key))
        self._watch(key, conv)
        if not self._port_online():
            return  # the router resumes it on the next connect
        try:
            await self._router.open(key)
        except GatewayError as exc:
            log.info("opening %s failed: %s", key, exc)

    def rename_session(self, key: str, title: str) -> None:
        key = self._aliases.get(key, key)
        state = self._sessions.get(key)
        if state is None:
            return
        state.summary = replace(state.summary, title=title)
        if not is_temp_key(key):
            self._store.upsert_session(self._id, key, title=title)
            runtime = self._router.runtime_id(key)
            if runtime:
                self._spawn(
                    self._call_quietly("session.title", {"session_id": runtime, "title": title})
                )
        self._emit_sessions()

    def delete_session(self, key: str) -> None:
        key = self._aliases.get(key, key)
        state = self._sessions.pop(key, None)
        if state is None:
            return
        runtime = self._router.runtime_id(key)
        self._router.unroute(key)
        unsub = self._conv_unsubs.pop(key, None)
        if unsub:
            unsub()
        self._temp_convs.pop(key, None)
        if not is_temp_key(key):
            self._store.delete_session(self._id, key)
            if runtime:
                self._spawn(self._call_quietly("session.delete", {"session_id": runtime}))
        if self._open_key == key:
            self._open_key = None
        self._emit_sessions()

    def search(self, query: str) -> list[str]:
        hits = self._store.search(self._id, query)
        seen: dict[str, None] = {}
        for hit in hits:
            seen.setdefault(hit.session_key, None)
        return list(seen)

    # -- sending -------------------------------------------------------------------------------

    def send(self, key: str, text: str, attachments: tuple[Attachment, ...]) -> None:
        key = self._aliases.get(key, key)
        if not text.strip() and not attachments:
            return
        try:
            self._outbox.submit(self._id, key, self._runtime_hint(key) or "", text, attachments)
        except StorageError as exc:
            # Nothing was sent; the prompt goes straight back to the composer.
            self._notify("on_prompt_restored", key, Draft(text, len(text), attachments), str(exc))
            return
        state = self._sessions.get(key)
        if state is not None:
            state.summary = replace(
                state.summary, preview=_preview(text), updated_at=self._clock.wall()
            )
            if state.summary.title in ("", "New chat"):
                state.summary = replace(state.summary, title=_title_from(text))
            self._emit_sessions()
        if is_temp_key(key) and self._port_online():
            self._ensure_created(key)

    def interrupt(self, key: str) -> None:
        key = self._aliases.get(key, key)
        runtime = self._router.runtime_id(key)
        if runtime:
            self._spawn(self._call_quietly("session.interrupt", {"session_id": runtime}))

    def retry(self, message_id: str) -> None:
        found = self._find_local(message_id)
        if found is None:
            return
        key, bubble = found
        self._drop_local(key, message_id)
        draft = self._drafts.load(self._draft_key(key))
        if draft.text.strip() == bubble.text.strip():
            self._drafts.update(self._draft_key(key), "", 0, ())
        self.send(key, bubble.text, bubble.attachments)

    def discard(self, message_id: str) -> None:
        found = self._find_local(message_id)
        if found is None:
            return
        key, _ = found
        ref = _ref_of(message_id)
        if ref:
            with contextlib.suppress(GatewayError):
                self._outbox.cancel(ref)
        self._drop_local(key, message_id)

    def edit_unsent(self, message_id: str) -> Draft | None:
        found = self._find_local(message_id)
        if found is None:
            return None
        key, bubble = found
        ref = _ref_of(message_id)
        if ref and bubble.delivery is DeliveryState.PENDING:
            try:
                self._outbox.cancel(ref)
            except GatewayError as exc:
                self._notify("on_notice", key, str(exc))
                return None
        self._drop_local(key, message_id)
        return Draft(bubble.text, len(bubble.text), bubble.attachments)

    def respond(self, key: str, request_id: str, answer: str | bool) -> None:
        key = self._aliases.get(key, key)
        runtime = self._router.runtime_id(key)
        if not runtime:
            return
        # Hermes' shapes: approval.respond takes a choice ("once" approves this one request).
        if isinstance(answer, bool):
            choice = "once" if answer else "deny"
            params = {"session_id": runtime, "request_id": request_id, "choice": choice}
            self._spawn(self._call_quietly("approval.respond", params))
        else:
            params = {"session_id": runtime, "request_id": request_id, "answer": answer}
            self._spawn(self._call_quietly("clarify.respond", params))
        self._notify("on_approval_closed", key, request_id)

    # -- connection intents --------------------------------------------------------------------

    def pause(self) -> None:
        self._sup.pause()

    def resume(self) -> None:
        self._sup.resume()

    def reconnect_now(self) -> None:
        self._sup.reconnect_now()

    def network_changed(self) -> None:
        self._sup.network_changed()

    def woke_up(self) -> None:
        self._sup.woke_up()

    # -- drafts and attachments ----------------------------------------------------------------

    def load_draft(self, key: str) -> Draft | None:
        key = self._aliases.get(key, key)
        record = self._drafts.load(self._draft_key(key))
        if record.empty:
            return None
        draft = Draft(record.text, record.cursor, record.attachments)
        if key in self._left_drafts:
            self._left_drafts.discard(key)
            self._notify("on_draft_restored", key, draft)
        return draft

    def save_draft(
        self, key: str, text: str, cursor: int, attachments: tuple[Attachment, ...]
    ) -> None:
        key = self._aliases.get(key, key)
        self._drafts.update(self._draft_key(key), text, cursor, attachments)

    def undo_restore(self, key: str) -> Draft | None:
        key = self._aliases.get(key, key)
        record = self._drafts.undo_restore(self._draft_key(key))
        return Draft(record.text, record.cursor, record.attachments) if record else None

    def attach_file(self, path: str) -> Attachment:
        return self._attachments.add(path)

    def attach_bytes(self, data: bytes, filename: str) -> Attachment:
        return self._attachments.add(data, filename)

    def _draft_key(self, key: str) -> str:
        # Drafts are keyed per profile so two gateways' session ids can never collide.
        return f"{self._id}|{key}"

    # -- supervisor, router and outbox callbacks ------------------------------------------------

    def _on_supervisor_status(self, status: ConnectionStatus) -> None:
        self._notify("on_status", status)

    def _on_router_synced(self, epoch: int) -> None:
        if self._closed or epoch != self._sup.epoch:
            return
        self._spawn(self._after_online(epoch))

    async def _after_online(self, epoch: int) -> None:
        for key in list(self._sessions):
            if is_temp_key(key) and self._has_work(key):
                self._ensure_created(key)
        await self._reconcile_unconfirmed(epoch)
        self._outbox.on_online(self._id)
        await self._refresh_list(epoch)

    async def _reconcile_unconfirmed(self, epoch: int) -> None:
        port = SupervisorPort(self._sup, self._router)
        for key in self._outbox.unconfirmed_sessions(self._id):
            if epoch != self._sup.epoch:
                return
            snapshot = self._snapshots.pop(key, None)
            try:
                if snapshot is not None:
                    result = self._outbox.reconcile(key, snapshot, profile_id=self._id)
                    if not result.unresolved:
                        continue
                runtime = self._router.runtime_id(key) or ""
                await self._outbox.reconcile_via(port, key, runtime, profile_id=self._id)
            except GatewayError as exc:
                log.info("reconciling %s failed: %s", key, exc)

    def _on_router_snapshot(self, key: str, snapshot: dict[str, Any]) -> None:
        self._snapshots[key] = snapshot
        self._cache_session(key, snapshot)

    async def _refresh_list(self, epoch: int) -> None:
        try:
            result = await self._sup.call("session.list", {"limit": 200})
        except GatewayError as exc:
            log.info("session.list failed: %s", exc)
            return
        if epoch != self._sup.epoch or not isinstance(result, dict):
            return
        for row in result.get("sessions") or []:
            if not isinstance(row, dict) or not row.get("id"):
                continue
            key = str(row["id"])
            fields: dict[str, Any] = {
                "title": str(row.get("title") or ""),
                "preview": _preview(str(row.get("preview") or "")),
                "message_count": int(row.get("message_count") or 0),
            }
            updated = row.get("updated_at") or row.get("last_active") or row.get("started_at")
            if isinstance(updated, int | float):
                fields["updated_at"] = float(updated)
            record = self._store.upsert_session(self._id, key, **fields)
            state = self._sessions.get(key)
            if state is None:
                self._sessions[key] = _SessionState(record.summary())
            else:
                state.summary = replace(
                    record.summary(), runtime_id=state.summary.runtime_id or record.runtime_id
                )
        self._emit_sessions()

    def _on_supervisor_event(self, event: Any, epoch: int) -> None:
        etype = getattr(event, "type", "")
        payload = getattr(event, "payload", {}) or {}
        key = self._key_for_runtime(getattr(event, "session_id", None))
        if key is None:
            return
        if etype in ("approval.request", "clarify.request"):
            self._notify("on_approval_request", key, _approval_from(etype, payload))
        elif etype == "notice":
            text = payload.get("text") or payload.get("message")
            if isinstance(text, str) and text:
                self._notify("on_notice", key, text)
        elif etype in _ENDED and key != self._open_key:
            state = self._sessions.get(key)
            if state is not None:
                state.unread += 1
                self._emit_sessions()

    def _on_outbox_state(self, entry: OutboxEntry) -> None:
        if entry.profile_id == self._id:
            self._show_entry(entry)

    def _on_outbox_removed(self, entry: OutboxEntry) -> None:
        if entry.profile_id != self._id:
            return
        key = self._aliases.get(entry.session_key, entry.session_key)
        bubble_id = _bubble_id(entry.submission_ref)
        state = self._sessions.get(key)
        if state is None or bubble_id not in state.local:
            return
        bubble = state.local.pop(bubble_id)
        if entry.state is DeliveryState.FAILED:
            # A failed entry leaves the outbox only once it is back in the composer, with its
            # own Retry: a second copy on screen could be sent twice.
            self._remove_bubble(key, bubble_id)
            return
        conv = self._conversation(key)
        if entry.state is not DeliveryState.CONFIRMED or conv is None:
            self._remove_bubble(key, bubble_id)
            return
        if _echoed(conv.messages, bubble, entry.history_mark):
            # A snapshot already brought the gateway's copy of this prompt: keep only that.
            self._remove_bubble(key, bubble_id)
            return
        bubble.delivery = DeliveryState.CONFIRMED
        bubble.delivery_error = ""
        self._notify("on_message_changed", key, bubble)

    def _on_outbox_restore(self, entry: OutboxEntry) -> bool:
        if entry.profile_id != self._id:
            return True
        key = entry.session_key
        try:
            result = self._drafts.restore(self._draft_key(key), entry.text, entry.attachments)
        except StorageError as exc:
            log.warning("could not restore a prompt to the composer: %s", exc)
            return False
        draft = Draft(result.draft.text, result.draft.cursor, result.draft.attachments)
        self._notify("on_prompt_restored", key, draft, entry.error or "delivery not confirmed")
        return True

    def _on_drafts_save_state(self, draft_key: str, saved: bool, error: Any) -> None:
        profile, _, key = draft_key.partition("|")
        if profile == self._id:
            self._notify("on_draft_save_state", key, saved, str(error) if error else "")

    # -- session creation ----------------------------------------------------------------------

    def _ensure_created(self, temp_key: str) -> None:
        if temp_key in self._creating or temp_key not in self._sessions:
            return
        task = asyncio.get_running_loop().create_task(self._create(temp_key))
        self._creating[temp_key] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _create(self, temp_key: str) -> str | None:
        try:
            state = self._sessions.get(temp_key)
            title = state.summary.title if state and state.summary.title != "New chat" else None
            params: dict[str, Any] = {"title": title} if title else {}
            real_key = await self._router.create(**params)
        except GatewayError as exc:
            log.info("creating a session failed: %s", exc)
            return None
        finally:
            self._creating.pop(temp_key, None)
        self._adopt_created(temp_key, real_key)
        return real_key

    def _adopt_created(self, temp_key: str, real_key: str) -> None:
        state = self._sessions.pop(temp_key, None)
        temp_conv = self._temp_convs.pop(temp_key, None)
        runtime = self._router.runtime_id(real_key)
        summary = replace(
            state.summary if state else SessionSummary(key=real_key, title=""),
            key=real_key,
            runtime_id=runtime,
        )
        new_state = _SessionState(summary, unread=state.unread if state else 0)
        self._sessions[real_key] = new_state
        self._store.upsert_session(
            self._id,
            real_key,
            runtime_id=runtime,
            title=summary.title,
            preview=summary.preview,
            updated_at=summary.updated_at or self._clock.wall(),
        )
        self._store.rekey_session(self._id, temp_key, real_key)
        self._drafts.adopt(self._draft_key(temp_key), self._draft_key(real_key))
        if state is not None:
            for bubble in state.local.values():
                new_state.local[bubble.id] = bubble
        conv = self._router.conversation(real_key)
        if conv is not None:
            if temp_conv is not None:
                for message in temp_conv.messages:
                    conv.append_local(message)
            self._watch(real_key, conv)
        self._aliases[temp_key] = real_key
        if self._open_key == temp_key:
            self._open_key = real_key
        self._notify("on_session_key_changed", temp_key, real_key)
        self._emit_sessions()
        self._outbox.on_online(self._id)

    def _has_work(self, key: str) -> bool:
        return any(e.session_key == key for e in self._outbox.entries(self._id))

    # -- conversations -------------------------------------------------------------------------

    def _conversation(self, key: str) -> Conversation | None:
        return self._temp_convs.get(key) or self._router.conversation(key)

    def _watch(self, key: str, conv: Conversation) -> None:
        if key in self._conv_unsubs:
            return
        self._conv_unsubs[key] = conv.add_listener(self._on_conversation_changed)

    def _on_conversation_changed(self, conv: Conversation) -> None:
        key = conv.key
        state = self._sessions.get(key)
        if state is not None and state.running != conv.running:
            state.running = conv.running
            self._notify("on_running", key, conv.running)
            if not conv.running:
                self._cache_conversation(key, conv)
            self._emit_sessions()
        if state is not None and conv.title and conv.title != state.summary.title:
            state.summary = replace(state.summary, title=conv.title)
            self._store.upsert_session(self._id, key, title=conv.title)
            self._emit_sessions()
        # Deltas change one bubble: send only the last, unless the list shape changed.
        messages = self._view(key, conv.messages)
        streaming = conv.streaming_message
        if streaming is not None and self._shown.get(key) == len(messages):
            self._notify("on_message_changed", key, streaming)
        else:
            self._shown[key] = len(messages)
            self._notify("on_session_messages", key, messages)

    def _view(self, key: str, messages: Iterable[ChatMessage]) -> list[ChatMessage]:
        return list(messages)

    def _show_entry(self, entry: OutboxEntry) -> None:
        """Put a queued prompt's bubble in its conversation, or update its delivery state."""
        key = self._aliases.get(entry.session_key, entry.session_key)
        state = self._sessions.get(key)
        if state is None:
            state = _SessionState(SessionSummary(key=key, title=_title_from(entry.text)))
            self._sessions[key] = state
        bubble_id = _bubble_id(entry.submission_ref)
        bubble = state.local.get(bubble_id)
        is_new = bubble is None
        if bubble is None:
            bubble = ChatMessage(
                id=bubble_id,
                role=Role.USER,
                text=entry.text,
                created_at=entry.created_at,
                attachments=entry.attachments,
            )
            state.local[bubble_id] = bubble
        bubble.text = entry.text
        bubble.delivery = entry.state
        bubble.delivery_error = entry.error if entry.state is DeliveryState.FAILED else ""
        conv = self._ensure_conversation(key)
        if is_new:
            # In the conversation from the start, so the reply always lands below it.
            conv.append_local(bubble)
        else:
            self._notify("on_message_changed", key, bubble)

    def _ensure_conversation(self, key: str) -> Conversation:
        conv = self._conversation(key)
        if conv is None:
            if is_temp_key(key):
                conv = Conversation(key, now=self._clock.wall)
                self._temp_convs[key] = conv
            else:
                conv = self._router.route(key, self._runtime_hint(key))
        self._watch(key, conv)
        return conv

    def _find_local(self, message_id: str) -> tuple[str, ChatMessage] | None:
        for key, state in self._sessions.items():
            bubble = state.local.get(message_id)
            if bubble is not None:
                return key, bubble
        return None

    def _drop_local(self, key: str, message_id: str) -> None:
        state = self._sessions.get(key)
        if state is not None:
            state.local.pop(message_id, None)
        self._remove_bubble(key, message_id)

    def _remove_bubble(self, key: str, message_id: str) -> None:
        conv = self._conversation(key)
        if conv is not None:
            conv.messages[:] = [m for m in conv.messages if m.id != message_id]
            self._shown[key] = len(conv.messages)
        self._notify("on_message_removed", key, message_id)

    # -- cache ---------------------------------------------------------------------------------

    def _cache_session(self, key: str, snapshot: dict[str, Any]) -> None:
        runtime = snapshot.get("session_id")
        fields: dict[str, Any] = {}
        if isinstance(runtime, str) and runtime:
            fields["runtime_id"] = runtime
        messages = snapshot.get("messages")
        if isinstance(messages, list):
            fields["message_count"] = len(messages)
        if fields and not is_temp_key(key):
            self._store.upsert_session(self._id, key, **fields)
        conv = self._router.conversation(key)
        if conv is not None:
            self._watch(key, conv)
            self._notify("on_session_messages", key, self._view(key, conv.messages))
            self._cache_conversation(key, conv)

    def _cache_conversation(self, key: str, conv: Conversation) -> None:
        if is_temp_key(key):
            return
        rows = [
            CachedMessage(
                idx=i,
                role=m.role.value,
                text=m.text,
                thinking=m.thinking,
                created_at=m.created_at,
                status=m.status,
            )
            for i, m in enumerate(conv.messages)
            if not m.streaming
            and not (m.role is Role.USER and m.delivery is not DeliveryState.CONFIRMED)
        ]
        try:
            self._store.replace_messages(self._id, key, rows)
            if rows:
                last = rows[-1]
                self._store.upsert_session(
                    self._id,
                    key,
                    message_count=len(rows),
                    preview=_preview(last.text),
                    updated_at=self._clock.wall(),
                )
                state = self._sessions.get(key)
                if state is not None:
                    state.summary = replace(
                        state.summary, preview=_preview(last.text), updated_at=self._clock.wall()
                    )
        except StorageError as exc:
            log.warning("could not cache messages: %s", exc)

    def _from_cache(self, key: str, row: CachedMessage) -> ChatMessage:
        role = Role(row.role) if row.role in {r.value for r in Role} else Role.SYSTEM
        msg = ChatMessage(
            id=f"{key}:{row.idx}",
            role=role,
            text=row.text,
            thinking=row.thinking,
            created_at=row.created_at,
            status=row.status,
        )
        if role is Role.USER:
            msg.delivery = DeliveryState.CONFIRMED
        return msg

    # -- helpers -------------------------------------------------------------------------------

    def _emit_sessions(self) -> None:
        self._notify("on_sessions", self.sessions())

    def _port_online(self) -> bool:
        return SupervisorPort(self._sup, self._router).is_online()

    def _runtime_hint(self, key: str) -> str | None:
        runtime = self._router.runtime_id(key)
        if runtime:
            return runtime
        state = self._sessions.get(key)
        return state.summary.runtime_id if state else None

    def _key_for_runtime(self, runtime_id: Any) -> str | None:
        if not isinstance(runtime_id, str):
            return None
        for key in self._router.routed:
            if self._router.runtime_id(key) == runtime_id:
                return key
        return None

    async def _call_quietly(self, method: str, params: dict[str, Any]) -> None:
        try:
            await self._sup.call(method, params)
        except GatewayError as exc:
            self._notify("on_notice", "", f"{method} failed: {exc}")

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _echoed(messages: list[ChatMessage], bubble: ChatMessage, history_mark: int) -> bool:
    """True when a snapshot already holds the gateway's copy of `bubble`'s prompt.

    Snapshot rows come first, in gateway order; only rows at or after the history length
    recorded when the prompt was queued can be its copy (an older identical prompt cannot).
    """
    text = " ".join(bubble.text.split())
    return any(
        m.role is Role.USER and not m.id.startswith("out:") and " ".join(m.text.split()) == text
        for i, m in enumerate(messages)
        if i >= history_mark
    )


def _bubble_id(ref: str) -> str:
    return f"out:{ref}"


def _ref_of(message_id: str) -> str | None:
    return message_id[4:] if message_id.startswith("out:") else None


_MARKUP = re.compile(r"[*_`#>~]+|!?\[([^\]]*)\]\([^)]*\)")


def _preview(text: str) -> str:
    """One line of plain text for the session list: markdown marks and links reduced."""
    plain = _MARKUP.sub(lambda m: m.group(1) or "", text)
    return " ".join(plain.split())[:120]


def _title_from(text: str) -> str:
    line = " ".join(text.split())
    return (line[:48] + "…") if len(line) > 48 else (line or "New chat")


def _approval_from(etype: str, payload: dict[str, Any]) -> ApprovalRequest:
    kind = "approval" if etype == "approval.request" else "clarify"
    request_id = str(payload.get("request_id") or payload.get("id") or uuid.uuid4().hex)
    title = str(payload.get("title") or payload.get("question") or payload.get("command") or "")
    detail = str(payload.get("detail") or payload.get("description") or "")
    choices = payload.get("choices") or payload.get("options") or ()
    return ApprovalRequest(
        request_id=request_id,
        kind=kind,
        title=title or ("Approve this action?" if kind == "approval" else "The agent asks"),
        detail=detail,
        choices=tuple(str(c) for c in choices) if isinstance(choices, list | tuple) else (),
    )
