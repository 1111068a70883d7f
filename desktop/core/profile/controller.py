"""One profile's core controller: the Qt-free object behind a chat window's `ChatBackend`.

It owns the profile's parts, a tree: each part holds only narrow ports (a few callables or a
small Protocol declared beside it), never another part; what crosses between parts is wired
here. `SessionIndex` (the session list), `ConversationFeed` (the one path by which the window
hears of a chat's messages), `PromptBubbles` (queued prompts), `TempSessions` (sessions not
created yet), `ComposerDrafts` (drafts), `SessionEvents` (notices, unread marks),
`ListRefresh` (`session.list`), `OnlineCatchUp` (work after a reconnect), `ChatAdmin` (delete,
rename) and `AgentCommands` (slash commands, models).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any

from desktop.common.clock import Clock
from desktop.common.codes import METHOD_NOT_FOUND
from desktop.common.methods import (
    APPROVAL_RECEIVED,
    RESPOND,
    SESSION_BRANCH,
    SESSION_HISTORY,
    SESSION_UNDO,
)
from desktop.core.chats.index import SessionIndex
from desktop.core.chats.requests import APPROVAL_CHOICES, WAITING_KIND, clarify_result
from desktop.core.chats.router import BRANCH_NOT_SERVED, SessionRouter
from desktop.core.chats.versions import version_of
from desktop.core.delivery.outbox import Outbox, OutboxError
from desktop.core.delivery.port import SupervisorPort
from desktop.core.disk.attachments import AttachmentStore
from desktop.core.disk.drafts import DraftKeeper
from desktop.core.disk.store import SearchHit, Store, prompt_key
from desktop.core.errors import (
    BranchUnsupported,
    GatewayError,
    HermesQtError,
    RpcError,
    StorageError,
)
from desktop.core.jobs import Jobs
from desktop.core.keys import TEMP_PREFIX, is_temp_key
from desktop.core.link.dialect import Dialect
from desktop.core.link.supervisor import ConnectionSupervisor
from desktop.core.listeners import BackendListener, notice
from desktop.core.models import (
    ApprovalRequest,
    Attachment,
    ChatMessage,
    ConnectionState,
    ConnectionStatus,
    DeliveryState,
    Diagnostics,
    Draft,
    ModelChoice,
    ReconnectRecord,
    RequestAnswer,
    Role,
    RollbackState,
    SessionInfo,
    SessionSummary,
)
from desktop.core.observers import Observers, Unsubscribe
from desktop.core.profile.agent.agent_commands import AgentCommands
from desktop.core.profile.agent.background_work import BackgroundWork, work_support
from desktop.core.profile.agent.busy_default import BusyDefault
from desktop.core.profile.agent.rollback import Rollback
from desktop.core.profile.agent.steering import Steering, steer_available
from desktop.core.profile.agent.wind_down import (
    WIND_DOWN_ATTEMPTS,
    WIND_DOWN_WAIT,
    call_past_turn_end,
)
from desktop.core.profile.catchup import OnlineCatchUp
from desktop.core.profile.chat_admin import ChatAdmin
from desktop.core.profile.chat_events import SessionEvents
from desktop.core.profile.composer_drafts import ComposerDrafts
from desktop.core.profile.feed import ConversationFeed
from desktop.core.profile.list_refresh import ListRefresh
from desktop.core.profile.new_chats import TempSessions
from desktop.core.profile.prompt_bubbles import PromptBubbles, bubble_id, ref_of
from desktop.core.profile.stopping import StopRequests

__all__ = ["TEMP_PREFIX", "ProfileController", "is_temp_key"]

log = logging.getLogger(__name__)
# Search hits handed to the UI: every matching chat of a long history, not just a screenful.
SEARCH_LIMIT = 500


# How long a Retry waits for a gateway that is still ending the failed turn (4009 to undo).


KEPT_BY_GATEWAY = (
    "The gateway kept the earlier reply in its stored history: the agent still sees it, and "
    "after a reconnect it shows there again"
)
NO_UNDO = (
    "This gateway cannot replace a reply (it has no session.undo): the prompt was sent again "
    "as a new message, and the agent still sees the earlier reply"
)


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
        port: SupervisorPort,
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
        self._attachments = attachments
        self._port = port  # the one the outbox reaches this profile by
        self._listeners: Observers[BackendListener] = Observers("backend")
        notify = self._listeners.emit
        self._clock = clock
        self._index = SessionIndex(profile_id, store, clock, notify)
        self._feed = ConversationFeed(
            router, self._index, clock, notify, on_request_shown=self._request_shown
        )
        # Approvals whose card was announced to the gateway (`approval.received`): once each.
        self._received: set[str] = set()
        self._drafts = ComposerDrafts(profile_id, drafts, store, notify)
        tell = self._tell
        self._bubbles = PromptBubbles(
            chats=self._feed,
            listing=self._index,
            cancel=outbox.cancel,
            resolve=self._resolve,
            tell=tell,
        )
        self._temps = TempSessions(
            listing=self._index,
            start_chat=self._feed.start_temp,
            create=self._create_remote,
            created=self._created,
            is_online=port.is_online,
            now=clock.wall,
            tell=tell,
        )
        self._jobs = Jobs("background", self._job_failed)
        self._loading_older: set[str] = set()  # sessions with a page of history on its way
        self._loading_newer: set[str] = set()
        self._lists = ListRefresh(
            link=supervisor, listing=self._index, timers=clock, spawn=self._spawn
        )
        self._catchup = OnlineCatchUp(
            profile_id,
            epoch=lambda: supervisor.epoch,
            blocked=self._blocked,
            outbox=outbox,
            create_waiting=self._create_waiting,
            refresh_list=self._lists.refresh,
            spawn=self._spawn,
            tell=tell,
        )
        self._commands = AgentCommands(
            supervisor,
            router,
            self._feed.get,
            notify,
            spawn=self._spawn,
            now=clock.wall,
            sleep=clock.sleep,
        )
        self._rollback = Rollback(
            supervisor,
            router,
            self._feed.get,
            notify,
            spawn=self._spawn,
            now=clock.wall,
            sleep=clock.sleep,
        )
        self._admin = ChatAdmin(
            supervisor=supervisor,
            router=router,
            index=self._index,
            chats=self._feed,
            removed=self._removed,
            is_online=port.is_online,
            spawn=self._spawn,
            tell=tell,
        )
        # Why this profile's gateway cannot branch, once it answered so ("" while it can).
        self._branch_limit = ""
        self._steering = Steering(
            call=self._sup.call,
            outbox=outbox,
            send=lambda key, text: self.send(key, text, ()),
            notify=notify,
            spawn=self._spawn,
        )
        self._busy = BusyDefault(self._sup.call)
        self._work = BackgroundWork(
            call=self._sup.call,
            dialect=lambda: supervisor.dialect,
            router=router,
            conversation=self._feed.get,
            notify=notify,
            spawn=self._spawn,
        )
        events = SessionEvents(router, self._index, notify, on_list_changed=self._lists.changed)
        self._stops = StopRequests(
            call=self._sup.call,
            online=self._port.is_online,
            runtime_id=router.runtime_id,
            conversation=self._feed.get,
            notify=notify,
            spawn=self._spawn,
        )
        self._unsubs: list[Callable[[], None]] = [
            supervisor.add_status_listener(self._on_status),
            supervisor.subscribe(events.on_supervisor_event),
            router.on_synced(self._catchup.on_router_synced),
            router.on_synced(self._stops.on_router_synced),
            router.on_snapshot(self._catchup.keep_snapshot),
            router.on_snapshot(self._feed.on_router_snapshot),
            router.on_snapshot(self._work.on_snapshot),
            router.on_snapshot(self._commands.on_snapshot),
            supervisor.subscribe(self._work.on_event),
            router.on_failure(self._tell_local_failure),
            outbox.on_state(self._bubbles.on_outbox_state, profile_id),
            outbox.on_removed(self._bubbles.on_outbox_removed, profile_id),
            outbox.on_restore(self._drafts.on_outbox_restore, profile_id),
        ]
        for entry in outbox.entries(profile_id):
            self._bubbles.show(entry)

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def profile_id(self) -> str:
        return self._id

    def start(self) -> None:
        self._sup.start()

    async def close(self) -> None:
        """Stop everything this controller started; the supervisor closes intentionally."""
        self._catchup.close()
        self._lists.close()
        for unsub in self._unsubs:
            unsub()
        self._drafts.close()
        self._feed.close()
        self._index.cache_ended_turns()
        await self._jobs.aclose()
        await self._temps.aclose()
        await self._router.close()
        await self._sup.close()

    def subscribe(self, listener: BackendListener) -> Unsubscribe:
        """Every callback reaches `listener` until the returned unsubscribe is called."""
        return self._listeners.subscribe(listener)

    def _on_status(self, status: ConnectionStatus) -> None:
        if status.state is ConnectionState.ONLINE:
            self._spawn(self._refresh_busy())  # the gateway's busy default, read again
        self._listeners.emit(lambda listener: listener.on_status(status))

    # -- snapshots -----------------------------------------------------------------------------

    def status(self) -> ConnectionStatus:
        return self._sup.status

    def is_online(self) -> bool:
        """Online with every open session re-attached: a prompt sent now goes out, not queued."""
        return self._port.is_online()

    def sessions(self) -> list[SessionSummary]:
        return self._index.summaries()

    def load_all_sessions(self) -> None:
        """Read the rest of the stored list (start-up reads its newest rows only)."""
        self._index.load_all()

    def summary(self, key: str) -> SessionSummary | None:
        """Session `key`'s row as the list shows it (title, preview, running, unread)."""
        return self._index.summary(self._resolve(key))

    def unread(self) -> int:
        """Replies not seen yet, over all of this profile's sessions."""
        return self._index.unread()

    def busy_keys(self) -> list[str]:
        busy = self._index.running_keys()
        busy.update(self._resolve(k) for k in self._feed.asking() if self.pending_requests(k))
        return self._index.in_list_order(busy)

    def pending_requests(self, key: str) -> list[ApprovalRequest]:
        """What the agent asks of the user in session `key` and is not answered yet, oldest
        first (the conversation's own list: answered here or elsewhere, it leaves it)."""
        conv = self._feed.get(self._resolve(key))
        return list(conv.pending.values()) if conv is not None else []

    def session_info(self, key: str) -> SessionInfo:
        """Session `key`'s model, provider and status line as last reported."""
        conv = self._feed.get(self._resolve(key))
        return conv.session_info() if conv is not None else SessionInfo()

    def diagnostics(self) -> Diagnostics:
        diag = self._sup.diagnostics()
        return Diagnostics(
            epoch=diag.epoch,
            generation=diag.generation,
            dialect=_dialect(self._sup.dialect),
            last_inbound_age=diag.last_inbound_age,
            heartbeat_rtts=tuple(diag.rtt_samples),
            reconnects=tuple(ReconnectRecord(at, reason) for at, reason in diag.reasons),
        )

    # -- sessions ------------------------------------------------------------------------------

    def create_session(self) -> str:
        return self._temps.new()

    def branch_session(self, key: str, message_id: str) -> str | None:
        """A new chat holding `key`'s messages up to `message_id` (session.branch), listed and
        returned at once under a temporary key, which moves to the branch's own once the
        gateway made it; None when `message_id` is not a message with words shown in `key`."""
        key = self._resolve(key)
        conv = self._feed.get(key)
        if conv is None or is_temp_key(key):
            return None
        chosen = next((m for m in conv.messages if m.id == message_id), None)
        if chosen is None or chosen.streaming or not chosen.text.strip():
            return None
        if chosen.role not in (Role.USER, Role.ASSISTANT):
            return None
        summary = self._index.summary(key)
        title = f"{summary.title if summary else 'Chat'} (branch)"
        return self._temps.new_made_by(lambda: self._branch_remote(key, message_id), title)

    def branch_available(self) -> tuple[bool, str]:
        """Whether Branch from here is offered, and why not where this profile's gateway showed
        it cannot branch (-32601 for session.branch, or a branch made without its stored id).
        Learned once for the profile: a reconnect to the same gateway does not forget it."""
        if self._branch_limit:
            return False, self._branch_limit
        dialect = self._sup.dialect
        if dialect is not None and not dialect.has(SESSION_BRANCH):
            return False, BRANCH_NOT_SERVED
        return True, ""

    async def _branch_remote(self, key: str, message_id: str) -> str:
        try:
            branch_key, _result = await self._router.branch(key, message_id)
        except BranchUnsupported as exc:
            self._branch_limit = exc.limit
            raise
        return branch_key

    def open_session(self, key: str) -> list[ChatMessage]:
        key = self._resolve(key)
        self._index.open(key)
        self._work.opened(key)
        conv = self._feed.get(key)
        if conv is not None and conv.messages:
            conv.reattach()  # opened anew: at its live end, like any session
            return list(conv.messages)
        if conv is not None or is_temp_key(key):
            return self._index.cached_messages(key)
        # Followed from now on, its conversation seeded from the cache: what the window shows
        # is read once (10,000 cached messages took ~55 ms, read twice at a start).
        conv = self._feed.route(key)
        self._spawn(self._open_remote(key))
        return list(conv.messages)

    def view_session(self, viewer: str, key: str | None) -> None:
        """`viewer` (a window, or the main window's front tab) shows `key` now, None: no chat
        of this profile. A turn ending in a chat some viewer shows adds no unread mark; one
        in a chat none shows (a background tab, a chat left) adds one."""
        self._index.view(viewer, self._resolve(key) if key is not None else None)

    def load_older(self, key: str) -> None:
        key = self._resolve(key)
        conv = self._feed.get(key)
        if key in self._loading_older or conv is None or conv.history_start <= 0:
            return
        self._loading_older.add(key)
        self._spawn(self._load_older(key))

    async def _load_older(self, key: str) -> None:
        try:
            added = await self._router.load_older(key)
        except GatewayError as exc:
            log.info("loading older messages of %s failed: %s", key, exc)
            return
        finally:
            self._loading_older.discard(key)
        # Announced once the next page may be asked for: the view (still near the top, or
        # going to an older search hit) asks for it while handling this one.
        self._feed.prepended(key, added)

    def load_newer(self, key: str) -> None:
        key = self._resolve(key)
        conv = self._feed.get(key)
        if key in self._loading_newer or conv is None or conv.gap is None:
            return
        self._loading_newer.add(key)
        self._spawn(self._load_newer(key))

    async def _load_newer(self, key: str) -> None:
        try:
            added = await self._router.load_newer(key)
        except GatewayError as exc:
            log.info("loading newer messages of %s failed: %s", key, exc)
            return
        finally:
            self._loading_newer.discard(key)
        self._feed.appended(key, added)

    async def _open_remote(self, key: str) -> None:
        self._feed.route(key)
        if not self._port.is_online():
            return  # the router resumes it on the next connect
        try:
            await self._router.open(key)
        except GatewayError as exc:
            log.info("opening %s failed: %s", key, exc)

    def rename_session(self, key: str, title: str) -> None:
        """Retitle `key` here and on the gateway (by its runtime id); a refusal is told."""
        self._admin.rename(self._resolve(key), title)

    def pin_session(self, key: str, pinned: bool) -> None:
        """Keep `key` at the top of the list (a local mark: no gateway knows pins)."""
        self._index.mark(self._resolve(key), pinned=pinned)

    def archive_session(self, key: str, archived: bool) -> None:
        """Leave `key` out of the list, or put it back (local; it stays on the gateway)."""
        self._index.mark(self._resolve(key), archived=archived)

    def delete_session(self, key: str) -> None:
        """Delete `key` on the gateway (by its stored id), then here; a refusal is told."""
        self._admin.delete(self._resolve(key))

    def search(self, query: str) -> list[str]:
        return list(dict.fromkeys(hit.session_key for hit in self.search_hits(query)))

    def search_hits(self, query: str) -> list[SearchHit]:
        return self._index.search(query, SEARCH_LIMIT)

    def prompts(self) -> list[tuple[str, str]]:
        """(chat key, text) of the prompts kept here over every chat, newest first (Ctrl+R)."""
        return self._index.prompts()

    def export_session(self, key: str, path: str) -> None:
        self._index.export(self._resolve(key), Path(path))

    # -- sending -------------------------------------------------------------------------------

    def send(self, key: str, text: str, attachments: tuple[Attachment, ...]) -> None:
        key = self._resolve(key)
        if not text.strip() and not attachments:
            return
        runtime = self._feed.runtime_hint(key) or ""
        try:
            self._outbox.submit(self._id, key, runtime, text, attachments)
        except (StorageError, OutboxError) as exc:
            # Nothing was sent (not stored, or too large); the prompt goes back to the composer.
            draft, error = Draft(text, len(text), attachments), str(exc)
            self._listeners.emit(lambda listener: listener.on_prompt_restored(key, draft, error))
            return
        self._index.note_prompt(key, text)
        if is_temp_key(key) and self._port.is_online():
            self._temps.ensure_created(key)

    def interrupt(self, key: str) -> None:
        key = self._resolve(key)
        conv = self._feed.get(key)
        if conv is not None:
            conv.stop_requested()  # its end reads "stopped by you", not "interrupted"
        self._stops.stop(key)

    # -- while a turn runs (core/profile/agent/steering.py) -------------------------------------

    def steer_available(self) -> tuple[bool, str]:
        """Whether Steer can be offered on this connection, and the reason when not."""
        return steer_available(self._sup.dialect if self._port.is_online() else None)

    def queued(self, key: str) -> list[ChatMessage]:
        """The follow-ups of `key` waiting to go out (held behind its reply), in send order."""
        key = self._resolve(key)
        found = (
            self._bubbles.find(bubble_id(e.submission_ref))
            for e in self._outbox.queued(self._id, key)
        )
        return [f[1] for f in found if f is not None]

    async def _refresh_busy(self) -> None:
        before = self._busy.value
        if await self._busy.refresh() != before:
            # What the connection offers changed: the window reads it again with the status.
            status = self._sup.status
            self._listeners.emit(lambda listener: listener.on_status(status))

    def busy_default(self) -> str | None:
        """What Enter does while a reply runs, as the gateway keeps it (None: it keeps none)."""
        return self._busy.value

    async def set_busy_default(self, mode: str) -> bool:
        """Keep `mode` on the gateway; False when it keeps none (keep it locally then)."""
        return await self._busy.set(mode)

    def keep_busy_default(self, mode: str) -> None:
        """The user chose what Enter does while a reply runs: kept on the gateway, then read
        back; the window hears it with the status (as after a connect)."""
        self._spawn(self._keep_busy_default(mode))

    async def _keep_busy_default(self, mode: str) -> None:
        if not await self._busy.set(mode):
            self._tell("", "The gateway did not keep the choice; this app keeps it instead")
        status = self._sup.status
        self._listeners.emit(lambda listener: listener.on_status(status))

    def steer(self, key: str, text: str) -> None:
        """Put `text` into the running turn; refused or not served, it is queued instead."""
        key = self._resolve(key)
        if text.strip():
            self._steering.steer_text(key, self._router.runtime_id(key) or "", text)

    def steer_queued(self, message_id: str) -> bool:
        """Offer the queued follow-up `message_id` to the running turn now."""
        ref = ref_of(message_id)
        found = self._bubbles.find(message_id)
        if ref is None or found is None:
            return False
        return self._steering.steer_queued(found[0], self._router.runtime_id(found[0]) or "", ref)

    def move_queued(self, message_id: str, step: int) -> bool:
        """Send the queued follow-up `message_id` `step` places earlier (<0) or later."""
        ref = ref_of(message_id)
        try:
            return ref is not None and self._outbox.move(ref, step)
        except OutboxError as exc:
            notice(self._listeners.emit, "", str(exc))
            return False

    def stop_and_send(self, key: str, text: str, attachments: tuple[Attachment, ...]) -> None:
        """Stop the running turn, then send: the outbox holds it until that turn has ended."""
        self.send(key, text, attachments)
        self.interrupt(key)

    def retry(self, message_id: str) -> None:
        found = self._bubbles.find(message_id)
        if found is None or found[1].delivery is not DeliveryState.FAILED:
            return  # pending or unconfirmed: it is still on its way; never send it twice
        key, bubble = found
        # A copy the user typed back into the composer must not be sent a second time.
        self._drafts.clear_if_holds(key, bubble.text)
        ref = ref_of(message_id)
        if ref and self._outbox.retry(ref) is not None:
            return  # the same entry goes out again, under its original idempotency key
        self._bubbles.take(message_id)
        self.send(key, bubble.text, bubble.attachments)

    def regenerate(self, key: str, reply_id: str) -> bool:
        """A new reply to the last reply's prompt in its place, the old one kept as an earlier
        version (< n/m > on the bubble): as `retry_reply`, same turn, one user message. False
        when it cannot replace it (not the last turn, offline, the prompt's row not known)."""
        return self.retry_reply(key, reply_id, keep=True)

    def resend_edited(
        self, key: str, prompt_id: str, text: str, attachments: tuple[Attachment, ...]
    ) -> bool:
        """The last turn's prompt `prompt_id`, edited to `text`, replaces that prompt and its
        reply in place; the pair before it is kept as an earlier version (< n/m >). False
        when it cannot be replaced (not the last turn, a reply running, offline): the caller
        sends it as a new prompt."""
        key = self._resolve(key)
        conv = self._feed.get(key)
        if conv is None:
            return False
        at = next((i for i, m in enumerate(conv.messages) if m.id == prompt_id), None)
        after = conv.messages[at + 1 :] if at is not None else []
        reply = next((m for m in after if m.role is Role.ASSISTANT), None)
        turn = conv.last_turn(reply.id) if reply is not None else None
        runtime = self._router.runtime_id(key)
        if turn is None or turn[0].id != prompt_id or not runtime or not self._port.is_online():
            return False
        assert reply is not None
        edited = replace(turn[0], text=text, attachments=attachments)
        self._spawn(self._retry_turn(key, runtime, reply.id, *turn, keep=True, edited=edited))
        return True

    def retry_reply(self, key: str, reply_id: str, *, keep: bool = False) -> bool:
        """Send the prompt of a reply that did not complete again as the same turn: the
        gateway drops the last exchange (`session.undo`), the reply and its prompt leave the
        chat, and the prompt goes out once more (one user message, on screen and in the
        store). False when that cannot be done (not the last turn, offline): the caller sends
        the prompt as a new one instead."""
        key = self._resolve(key)
        conv = self._feed.get(key)
        turn = conv.last_turn(reply_id) if conv is not None else None
        runtime = self._router.runtime_id(key)
        if conv is None or turn is None or not runtime or not self._port.is_online():
            return False
        before: int | None = None
        if conv.history_start == 0:  # the whole history is here: its prompts can be counted
            at = conv.messages.index(turn[0])
            before = sum(1 for m in conv.messages[:at] if m.role is Role.USER)
        self._spawn(
            self._retry_turn(key, runtime, reply_id, *turn, keep=keep, prompts_before=before)
        )
        return True

    async def _retry_turn(
        self,
        key: str,
        runtime: str,
        reply_id: str,
        prompt: ChatMessage,
        row: int | None,
        *,
        keep: bool = False,
        edited: ChatMessage | None = None,
        prompts_before: int | None = None,
    ) -> None:
        """Replace the last turn: `keep` keeps its reply as an earlier version, `edited` is
        the prompt to send in its place (else the prompt itself, again). `prompts_before`:
        how many prompts the chat holds before it, when it holds the whole history."""
        sent = edited or prompt
        rewind: dict[str, Any] | None = None
        try:
            if keep:
                # The gateway's own cut where its history names the turn: Hermes' undo
                # reaches only the agent's memory on some lines (0.19, 0.20.1), so the
                # stored rows, what a reconnect shows, would keep the earlier exchange.
                found, rewind, users = await self._rewind_of(runtime, prompt.text)
                row = found if row is None else row
                if rewind is not None:
                    await self._idle(key, runtime)
            elif prompts_before is not None:
                # A Retry: a stopped or cut reply's exchange is in the stored rows (0.19 and
                # 0.20.1's undo would leave it there), a failed one's often not (then the
                # rows hold only the prompts before it, and undo drops it from memory).
                _, cut, users = await self._rewind_of(runtime, prompt.text)
                if cut is not None and users == prompts_before + 1:
                    rewind = cut
                    await self._idle(key, runtime)
            if rewind is None:
                await self._undo(runtime)
                if keep and users and (await self._rewind_of(runtime, prompt.text))[2] >= users:
                    # Its undo left the stored rows: they are what the agent and a reconnect
                    # see again. The reply is still replaced here, and the user is told.
                    notice(self._listeners.emit, key, KEPT_BY_GATEWAY)
        except RpcError as exc:
            if exc.code != METHOD_NOT_FOUND:
                notice(self._listeners.emit, key, f"Retry failed: {exc.message}")
                return
            # No undo on this gateway: its history keeps the failed exchange, so the prompt
            # shows again below it rather than passing for the same turn.
            if keep:
                notice(self._listeners.emit, key, NO_UNDO)
            self.send(key, sent.text, sent.attachments)
            return
        except GatewayError as exc:
            notice(self._listeners.emit, key, f"Retry failed: {exc}")
            return
        conv = self._feed.get(key)
        reply = next((m for m in conv.messages if m.id == reply_id), None) if conv else None
        if keep and reply is not None and row is not None:
            # The gateway forgot the reply: the store keeps it (and the prompt it answered),
            # on the prompt's row.
            self._index.versions.keep(key, row, version_of(reply, prompt.text), sent.text)
        self._feed.remove_message(key, reply_id)
        self._feed.remove_message(key, prompt.id)
        self._drafts.clear_if_holds(key, sent.text)
        try:
            self._outbox.submit(
                self._id,
                key,
                runtime,
                sent.text,
                sent.attachments,
                history_len=row,
                rewind=rewind,
            )
        except (StorageError, OutboxError) as exc:
            text, attachments = sent.text, sent.attachments
            draft, error = Draft(text, len(text), attachments), str(exc)
            self._listeners.emit(lambda listener: listener.on_prompt_restored(key, draft, error))

    async def _rewind_of(
        self, runtime: str, prompt: str
    ) -> tuple[int | None, dict[str, Any] | None, int]:
        """The history row of the session's last prompt, the `prompt.submit` params that
        cut the gateway's history before it (None: its rows do not show that prompt last;
        `session.undo` then), and how many user rows it holds. Rows with a `row_id` (0.20.1,
        0.22) are cut by that durable id, as those lines ask (an ordinal alone is refused
        there for a stored session); rows without (0.19, the embedded gateway) by the
        prompt's ordinal among the user rows."""
        page = await self._sup.call(SESSION_HISTORY, {"session_id": runtime})
        rows = page.get("messages") if isinstance(page, dict) else None
        if not isinstance(rows, list):
            return None, None, 0
        users = [
            (i, r)
            for i, r in enumerate(rows)
            if isinstance(r, dict) and r.get("role") == "user" and not r.get("display_kind")
        ]
        if not users:
            return None, None, 0
        at, last = users[-1]
        shown = prompt_key(str(last.get("text") or last.get("content") or ""))
        if not shown.startswith(prompt_key(prompt)):
            return at, None, len(users)  # another prompt is last there: no cut to aim
        # Consent to the cut (0.20.1, 0.22 refuse one without), also when it is the first turn.
        cut: dict[str, Any] = {"confirm_truncate": True, "confirm_empty_truncate": True}
        row_id = last.get("row_id")
        if isinstance(row_id, int) and not isinstance(row_id, bool):
            cut["truncate_before_row_id"] = row_id
        else:
            cut["truncate_before_user_ordinal"] = len(users) - 1
        return at, cut, len(users)

    async def _idle(self, key: str, runtime: str) -> None:
        """Wait while the gateway still winds the last turn down (0.20.1 says `running` for a
        moment after its end was sent): a cutting prompt.submit to a busy session is queued
        as a new turn, its cut ignored."""
        for _ in range(WIND_DOWN_ATTEMPTS):
            snap = await self._port.reattach(key, runtime)
            if not (isinstance(snap, dict) and snap.get("running") is True):
                return
            await self._clock.sleep(WIND_DOWN_WAIT)

    async def _undo(self, runtime: str) -> None:
        """`session.undo`, waited for while the gateway still winds the failed turn down: 0.22
        answers 4009 (busy) for a moment after the turn's end was sent."""
        await call_past_turn_end(
            self._sup, self._clock.sleep, SESSION_UNDO, {"session_id": runtime}
        )

    def discard(self, message_id: str) -> None:
        self._bubbles.discard(message_id)

    def edit_unsent(self, message_id: str) -> Draft | None:
        return self._bubbles.edit_unsent(message_id)

    def respond(self, key: str, request_id: str, answer: RequestAnswer) -> None:
        key = self._resolve(key)
        runtime = self._router.runtime_id(key)
        conv = self._feed.get(key)
        # Answered here: the card goes (the feed tells listeners when the conversation had it).
        request = conv.answered(request_id) if conv is not None else None
        if request is None:
            self._listeners.emit(lambda listener: listener.on_approval_closed(key, request_id))
        if request is not None and request.reply_to:
            self._reply_soon(request, answer)
            return
        if not runtime:
            return
        if isinstance(answer, dict):
            answer = next(iter(answer.values()), "")
        kind = request.kind if request is not None else None
        if kind is None:
            is_choice = isinstance(answer, bool) or answer in APPROVAL_CHOICES
            kind = "approval" if is_choice else "clarify"
        if kind == WAITING_KIND:
            # The only way out of a question this app was never sent: stop the turn, which
            # releases it on the gateway.
            self._stops.stop(key)
            return
        params: dict[str, Any] = {"session_id": runtime, "request_id": request_id}
        if kind == "approval":
            # Hermes' choices: once | session | always | deny. A bool is once / deny.
            if isinstance(answer, bool):
                answer = "once" if answer else "deny"
            params["choice"] = answer if answer in APPROVAL_CHOICES else "deny"
            if request is not None and not request.server_id:
                del params["request_id"]  # 0.19: no id; it resolves the oldest pending one
            self._answer_soon(RESPOND["approval"], params)
        elif kind in ("sudo", "secret"):
            # Never logged, never stored: the value lives only in this call's params.
            params["password" if kind == "sudo" else "value"] = str(answer)
            self._answer_soon(RESPOND[kind], params)
        else:
            params["answer"] = str(answer)
            self._answer_soon(RESPOND["clarify"], params)

    def _reply_soon(self, request: ApprovalRequest, answer: RequestAnswer) -> None:
        """Answer a server->client request (Hermes 0.22) by a reply to its id: the same id
        answers it from a newer socket after a reconnect. Never logged (secrets)."""
        result: dict[str, Any]
        if request.kind == "approval":
            if isinstance(answer, bool):
                answer = "once" if answer else "deny"
            result = {"choice": answer if answer in APPROVAL_CHOICES else "deny"}
        elif request.kind == "clarify":
            result = clarify_result(request, answer)
        else:
            result = {"value": "" if isinstance(answer, bool | dict) else answer}
        self._spawn(self._reply_quietly(request.reply_to, result))

    async def _reply_quietly(self, reply_to: str, result: dict[str, Any]) -> None:
        try:
            await self._sup.reply(reply_to, result)
        except GatewayError as exc:
            self._answer_not_sent(exc)

    def _answer_soon(self, method: str, params: dict[str, Any]) -> None:
        """Answer an approval or a question by a call (Hermes 0.19-0.21)."""
        self._spawn(self._answer_quietly(method, params))

    async def _answer_quietly(self, method: str, params: dict[str, Any]) -> None:
        try:
            await self._sup.call(method, params)
        except GatewayError as exc:
            self._answer_not_sent(exc)

    def _answer_not_sent(self, exc: GatewayError) -> None:
        # Still open on the gateway: the next snapshot lists it and the card comes back.
        notice(
            self._listeners.emit,
            "",
            f"The answer was not sent ({exc}); asked again when the connection is back",
        )

    def _request_shown(self, key: str, request: ApprovalRequest) -> None:
        """A card is on screen: a 0.22 approval's timeout runs from `approval.received`."""
        if request.kind != "approval" or not request.gateway_id:
            return
        if request.request_id in self._received:
            return
        runtime = self._router.runtime_id(key)
        if not runtime:
            return
        self._received.add(request.request_id)
        self._spawn(self._acknowledge(runtime, request.gateway_id))

    # -- what the agent offers (slash commands, models) --------------------------------------

    def commands(self) -> list[tuple[str, str]]:
        return self._commands.commands()

    def models(self, key: str) -> list[ModelChoice]:
        return self._commands.models(self._resolve(key))

    def load_commands(self, key: str) -> None:
        self._commands.load_commands(self._resolve(key))

    def run_command(self, key: str, command: str) -> None:
        self._commands.run(self._resolve(key), command)

    def load_models(self, key: str) -> None:
        self._commands.load_models(self._resolve(key))

    def set_model(self, key: str, choice: ModelChoice) -> None:
        self._commands.set_model(self._resolve(key), choice)

    def compress(self, key: str, focus: str = "") -> None:
        self._commands.compress(self._resolve(key), focus)

    def stop_subagent(self, key: str, subagent_id: str) -> None:
        self._work.stop_subagent(self._resolve(key), subagent_id)

    def kill_process(self, key: str, process_id: str) -> None:
        self._work.kill_process(self._resolve(key), process_id)

    def refresh_processes(self, key: str) -> None:
        self._work.refresh_processes(self._resolve(key))

    def work_support(self) -> tuple[str, str]:
        return work_support(self._sup.dialect)

    def set_auto_approve(self, key: str, on: bool) -> None:
        self._commands.set_auto_approve(self._resolve(key), on)

    def rollback_state(self, key: str) -> RollbackState:
        return self._rollback.state(self._resolve(key))

    def load_rollback(self, key: str) -> None:
        self._rollback.load(self._resolve(key))

    def rollback_diff(self, key: str, checkpoint: str) -> None:
        self._rollback.diff(self._resolve(key), checkpoint)

    def restore_checkpoint(self, key: str, checkpoint: str, file_path: str = "") -> None:
        self._rollback.restore(self._resolve(key), checkpoint, file_path)

    def reload_models(self) -> None:
        """The model providers changed (Settings saved): the header shows what now answers."""
        self._commands.reload_models()

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
        return self._drafts.load(self._resolve(key))

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
        self._drafts.save(
            self._resolve(key), text, cursor, attachments, quote=quote, quote_from=quote_from
        )

    def undo_restore(self, key: str) -> Draft | None:
        return self._drafts.undo_restore(self._resolve(key))

    def attach_file(self, path: str) -> Attachment:
        return self._attachments.add(path)

    def attach_bytes(self, data: bytes, filename: str) -> Attachment:
        return self._attachments.add(data, filename)

    # -- helpers -------------------------------------------------------------------------------

    def _resolve(self, key: str) -> str:
        return self._temps.resolve(key)

    async def _create_remote(self, title: str | None) -> str:
        """`session.create` (titled when the user named the chat first); the real key."""
        return await self._router.create(**({"title": title} if title else {}))

    def _created(self, temp_key: str, real_key: str) -> None:
        """The gateway created a temporary session: its draft and queued bubbles move along,
        then its chat (the window hears of the new key), and what waited for it goes out."""
        self._drafts.adopt(temp_key, real_key)
        self._bubbles.rekey(temp_key, real_key)
        self._feed.adopt(temp_key, real_key)
        self._work.rekey(temp_key, real_key)
        conv = self._router.conversation(real_key)
        if conv is not None and conv.messages:
            self._feed.publish(real_key, conv)  # a branch: the messages it was made with
        self._outbox.on_online(self._id)

    def _create_waiting(self) -> None:
        """Back online: the temporary sessions with prompts queued are created first."""
        self._temps.create_waiting({e.session_key for e in self._outbox.entries(self._id)})

    def _blocked(self, key: str) -> bool:
        routed = self._router.session(key)
        return routed is not None and routed.blocked

    def _removed(self, key: str) -> None:
        """Session `key` was deleted: its conversation and bubbles go with it."""
        self._feed.forget(key)
        self._bubbles.forget(key)

    def _tell(self, key: str, text: str) -> None:
        notice(self._listeners.emit, key, text)

    async def _acknowledge(self, runtime: str, request_id: str) -> None:
        """Tell a 0.22 gateway an approval card is on screen (its timeout runs from then)."""
        try:
            await self._sup.call(
                APPROVAL_RECEIVED, {"session_id": runtime, "request_id": request_id}
            )
        except GatewayError as exc:
            # Nothing the user did failed: the gateway's own timeout runs from its sending.
            log.info("approval.received for %s not sent: %s", request_id, exc)

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._jobs.spawn(coro)

    def _job_failed(self, exc: HermesQtError) -> None:
        """A background job stopped by this computer (disk, attachment) tells the user."""
        log.warning("a background job failed: %s", exc)
        self._tell_local_failure("", exc)

    def _tell_local_failure(self, key: str, exc: HermesQtError) -> None:
        """An error of this computer's side (disk, attachment) is shown to the user."""
        notice(self._listeners.emit, key, str(exc))


def _dialect(dialect: Dialect | None) -> str:
    """Which family of the protocol the gateway speaks, for the details popover."""
    if dialect is None:
        return ""
    if dialect.submission_ref:
        return "embedded"
    if dialect.heartbeat:
        return "current"
    return "legacy"
