"""Per-session conversation state: events and snapshots in, the ChatMessage list the UI renders."""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
from collections.abc import Callable
from functools import partial
from typing import Any, Literal, Protocol

from desktop.common.methods import REQUEST_CANCEL_EVENT, SERVER_REQUEST_EVENT
from desktop.core.chats import reply_state as rs
from desktop.core.chats.file_changes import record_tool_change
from desktop.core.chats.progress import context_of, reply_usage, todo_state
from desktop.core.chats.requests import (
    BLOCKING_KINDS,
    EXPIRE_EVENTS,
    REQUEST_EVENTS,
    WAITING_KIND,
    reports_pending,
    request_from,
    server_request,
    snapshot_requests,
    waiting_request,
)
from desktop.core.chats.subagents import (
    SUBAGENT_EVENTS,
    drop_finished,
    fold_event,
    fold_roster,
)
from desktop.core.link.protocol import Event
from desktop.core.models import (
    ApprovalRequest,
    BackgroundProcess,
    ChatMessage,
    DeliveryState,
    Role,
    SessionInfo,
    Subagent,
    TodoItem,
    ToolCall,
)
from desktop.core.observers import Observers, Unsubscribe

log = logging.getLogger(__name__)

ChangeListener = Callable[["Conversation"], None]


class CachePages(Protocol):
    """A session's bubbles as the local cache holds them (`SessionIndex.cached_messages`):
    those at history rows `first` up to `end` (None: to the last), at most `limit` of them,
    the newest ones with `newest`; in history order."""

    def __call__(
        self,
        *,
        first: int = 0,
        end: int | None = None,
        limit: int | None = None,
        newest: bool = False,
    ) -> list[ChatMessage]: ...


_ROLES = {r.value: r for r in Role}
# Ids of user bubbles the client created itself (queued prompts) start with this.
LOCAL_PREFIX = "out:"
# How far a seq may be from the watermark and still be taken as it is: no duplicate comes
# from further back, no real gap is wider (replay buffers hold hundreds of events).
SEQ_WINDOW = 10_000
# Local user bubbles the gateway has not confirmed yet survive a snapshot reload.
_UNSETTLED = {DeliveryState.PENDING, DeliveryState.UNCONFIRMED, DeliveryState.FAILED}


def cut_note(total: Any) -> str:
    """Said under a message the gateway had to cut to fit one frame."""
    size = f" of {total:,} characters" if isinstance(total, int) else ""
    return f"\n\n[… this message{size} was cut here: it is larger than one message can carry]"


COMPACTING_KINDS = frozenset({"compacting", "compressing"})
COMPACTING_TEXT = "Compacting the conversation…"


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


class Conversation:
    """The reducer behind one chat view.

    `apply(event)` folds a gateway event into the message list; `load_snapshot()` replaces the
    server-backed part from an activate/resume snapshot. Events carrying a `seq` at or below
    the watermark are duplicates and ignored. Listeners hear about every change.

    `pending` holds the requests the agent blocks on (approval, clarify, sudo, secret), keyed
    by request id so an event and a snapshot naming the same request show it once; a
    snapshot that no longer names one, an expiry or the end of the turn removes it.
    `status_text` is the transient spinner line (`thinking.delta`, `status.update`,
    `message.interim`). `usage` is the latest usage the gateway reported for the session and
    `todos` the agent's latest task list (Hermes 0.22).
    """

    def __init__(self, key: str, *, now: Callable[[], float] | None = None) -> None:
        self.key = key
        self.messages: list[ChatMessage] = []
        self.running = False
        self.status_text = ""
        self.title = ""
        self.last_seq = 0
        # Set when events arrived in an order no gateway sends: "gap" (caught up by replay, or
        # from a snapshot) or "restart" (rebuilt from a snapshot); the router clears it.
        self.resync_wanted: Literal["", "gap", "restart"] = ""
        # A reply just completed and no turn has started since (see _on_delta).
        self._completed = False
        # The user asked to stop the running turn: its "interrupted" end reads "stopped".
        self._stopping = False
        # The reply an `error` event of this turn failed (a message.complete after it is the
        # same failure, not a new reply).
        self._failed: ChatMessage | None = None
        # How many turns have ended here (complete, error, interrupted, an idle snapshot): no
        # gateway names its turns, so the outbox holds a follow-up until this count moves past
        # the value it had when the previous prompt was written (its turn is over).
        self.turns_ended = 0
        # Where the loaded history starts in the session's whole history (0: all of it). A
        # gateway that pages its history sends only the last messages; older pages come
        # through `prepend_history`.
        self.history_start = 0
        # The local cache of a chat opened from it (`seed_cached`) while its history shown is
        # the cache's (None once a gateway's history replaced it): older and newer pages are
        # read from there. The cache holds nothing before row `_cache_floor`.
        self._cache: CachePages | None = None
        self._cache_floor = 0
        # A long history is held as a bounded window: far up, the newest rows are dropped and
        # only the live end (the tail) is kept, hidden, for live events. While detached,
        # `messages[:_window]` is the window (rows `history_start` up to `_end_pos`) and the
        # rest is the tail, from row `_tail_pos`; None: `messages` is one contiguous run.
        self._window: int | None = None
        self._end_pos = 0
        self._tail_pos = 0
        # Replies in the tail when it was hidden, as they were then (text length, streaming).
        self._replies_seen: dict[str, tuple[int, bool]] = {}
        self.pending: dict[str, ApprovalRequest] = {}
        # session.info / snapshot info: model, provider, approval mode, ...
        self.info: dict[str, Any] = {}
        # The latest usage (session.usage tick, message.complete, snapshot info.usage).
        self.usage: dict[str, Any] = {}
        # The agent's task list and its revision (a stale todo.updated is not taken).
        self.todos: tuple[TodoItem, ...] = ()
        self._todo_revision = -1
        # The children its turns delegated to (id -> Subagent, spawn order) and the processes
        # the agent left running (the last `process.list`).
        self.subagents: dict[str, Subagent] = {}
        self.processes: tuple[BackgroundProcess, ...] = ()
        # Why no context figure shows, when the gateway was asked and gave none.
        self.context_note = ""
        self._now = now or (lambda: 0.0)
        self._started_at: float | None = None  # when the running turn's message.start came
        # The session's usage totals when the running turn's message.start came (Hermes
        # reports totals: a reply's share is what they grew by, see `reply_usage`).
        self._usage_base: dict[str, Any] | None = None
        # The gateway summarises the history (status.update compacting/compressing, or a
        # session.compress this client asked for): its status line shows even between turns.
        self.compacting = False
        self._compress_asked = False  # between this client's session.compress and its answer
        self._ids = itertools.count(1)
        self._listeners: Observers[ChangeListener] = Observers("conversation")
        # During a change announcement: the only messages the change touched, when a handler
        # knows them (a reply starting or completing); None means "look at the whole list".
        self.changed_only: tuple[ChatMessage, ...] | None = None
        # During a change announcement: only the live reply's text grew (a delta while a turn
        # runs); its running state, title, info and requests are as they were.
        self.text_grew = False
        self._touched: tuple[ChatMessage, ...] | None = None

    # -- observers -----------------------------------------------------------------------

    def session_info(self) -> SessionInfo:
        """Model, provider and approval mode as last reported, with the spinner line."""
        percent, used, most = context_of(self.usage)
        return SessionInfo(
            model=_text(self.info.get("model")),
            provider=_text(self.info.get("provider")),
            approval_mode=_text(self.info.get("approval_mode")),
            activity=self.status_text if self.running or self.compacting else "",
            context_percent=percent,
            context_used=used,
            context_max=most,
            todos=self.todos,
            auto_approve=_flag(self.info.get("yolo")),
            subagents=tuple(self.subagents.values()),
            processes=self.processes,
            context_note="" if percent is not None else self.context_note,
            running=self.running,
        )

    def add_listener(self, listener: ChangeListener) -> Unsubscribe:
        return self._listeners.subscribe(listener)

    @property
    def streaming_message(self) -> ChatMessage | None:
        """The assistant bubble that is still growing, if any.

        A prompt queued while a reply streams sits below that reply; it must not hide it.
        """
        for msg in reversed(self.messages):
            if msg.role is Role.ASSISTANT:
                return msg if msg.streaming else None
            if msg.role is Role.USER and not msg.id.startswith(LOCAL_PREFIX):
                return None
        return None

    def gateway_user_rows(self) -> int | None:
        """How many user rows the gateway's history holds, as far as this chat knows: its
        confirmed user bubbles, when the whole history is loaded (None when it is not)."""
        if self.history_start > 0 or self._window is not None:
            return None
        confirmed = DeliveryState.CONFIRMED
        return sum(1 for m in self.messages if m.role is Role.USER and m.delivery is confirmed)

    def reset_watermark(self) -> None:
        """The gateway restarted (new replay_epoch): its seq numbering starts over."""
        self.last_seq = 0
        self._todo_revision = -1  # a new runtime's todo store counts again too

    # -- local edits ---------------------------------------------------------------------

    def seed(self, messages: list[ChatMessage]) -> None:
        """Start from messages cached locally (already on screen): no change is announced."""
        if not self.messages:
            self.messages = list(messages)

    def seed_cached(self, cache: CachePages, limit: int) -> None:
        """Start from the newest `limit` bubbles of the local cache (what is shown before the
        gateway answers, or offline; no change is announced): a long chat's whole cache is
        not read for its first screen (10,000 cached messages took ~45 ms). Older ones are
        read from `cache` as they are wanted (`prepend_cached`), and all those a gateway's
        history reaches back to, before it replaces them (`load_snapshot`): their times,
        tool output and usage carry over to it, as from a chat seeded whole."""
        if self.messages:
            return
        page = cache(limit=limit, newest=True)
        if len(page) >= limit:
            page = page[_leading_replies(page) :]  # a reply comes with its prompt, older
        self.messages = page
        start = self._position(0)
        if start:
            self.history_start = start
            self._cache = cache

    @property
    def reads_cache(self) -> bool:
        """Whether the history shown is the local cache's (`seed_cached`; no gateway's
        history replaced it yet): its older and newer pages are read from there."""
        return self._cache is not None

    def prepend_cached(self, limit: int) -> int:
        """The newest `limit` cached bubbles before the loaded ones go before them (scrolling
        up in a chat shown from the cache); how many. Listeners are not told: the caller
        announces the new rows."""
        if self._cache is None or self.history_start <= self._cache_floor:
            return 0
        page = self._cache(end=self.history_start, limit=limit, newest=True)
        if len(page) >= limit:
            page = page[_leading_replies(page) :]
        else:  # the cache holds nothing older
            self._cache_floor = self._position_in(page, 0, self.history_start)
        return self._put_before(page, self._position_in(page, 0, self.history_start))

    def append_cached(self, limit: int) -> int:
        """While detached in a chat shown from the cache (see `append_history`): the oldest
        `limit` cached bubbles after the window go after it; how many bubbles the window
        gained (the tail's too when they reach it). Listeners are not told."""
        if self._cache is None or self._window is None:
            return 0
        page = self._cache(first=self._end_pos, end=self._tail_pos, limit=limit)
        end = self._tail_pos
        if len(page) >= limit:  # more before the tail: the next page starts after this one
            end = self._position_in(page, -1, self._end_pos) + 1
        return self._join(page, end)

    def _fill_cached(self, start: int) -> None:
        """Every cached bubble from history row `start` up to the loaded ones goes before
        them: what a gateway's history from `start` is laid over."""
        if self._cache is None or start >= self.history_start:
            return
        self._put_before(self._cache(first=start, end=self.history_start), start)

    def _put_before(self, older: list[ChatMessage], start: int) -> int:
        """`older` (bubbles from history row `start`) go before the loaded ones."""
        if not older:
            return 0
        self.messages[0:0] = older
        self.history_start = start
        if self._window is not None:
            self._window += len(older)
        return len(older)

    def _position_in(self, page: list[ChatMessage], index: int, default: int) -> int:
        """The history row of `page[index]`, `default` when it has none (or `page` is empty)."""
        place = self._place_of(page[index]) if page else None
        return default if place is None else place

    def append_local(self, message: ChatMessage) -> None:
        """A bubble that originates here (the user's prompt, a notice): shown at the live
        end, so a window far up is let go."""
        self.reattach()
        self.messages.append(message)
        if message.role is Role.USER:
            self._failed = None  # a new prompt: an error now is its turn's, not the last one's
            # ... and the children listed are the new prompt's (a background delegation's
            # result may start a turn of the gateway's own: its helpers stay listed till then).
            drop_finished(self.subagents)
        self._changed()

    def last_turn(self, reply_id: str) -> tuple[ChatMessage, int | None] | None:
        """When `reply_id` is the reply of the chat's last turn (what a Retry can send again as
        the same turn): its prompt and the prompt's history row (None when not known)."""
        if self.running or self._window is not None:
            return None
        at = next((i for i, m in enumerate(self.messages) if m.id == reply_id), None)
        if at is None or self.messages[at].role is not Role.ASSISTANT:
            return None
        if any(m.role in (Role.USER, Role.ASSISTANT) for m in self.messages[at + 1 :]):
            return None  # a later turn exists: this one cannot be replaced in place
        prompt = next(
            (m for m in reversed(self.messages[:at]) if m.role is Role.USER),
            None,
        )
        if prompt is None or prompt.delivery is not DeliveryState.CONFIRMED:
            return None
        return prompt, self._place_of(prompt)

    def set_running(self, running: bool) -> None:
        if self.running != running:
            self.running = running
            if not running:
                # The gateway is idle and never said how the reply ended.
                self._seal(rs.INTERRUPTED, rs.GATEWAY_WENT_AWAY)
                self._turn_over()
            self._changed()

    def stop_requested(self) -> None:
        """The user pressed Stop: the turn's interrupted end is theirs ("stopped by you")."""
        if self.running:
            self._stopping = True

    def apply_info(self, info: dict[str, Any]) -> None:
        """What the client learned itself of the session (a model switch it made)."""
        if self._on_info(info):
            self._changed()

    def answered(self, request_id: str) -> ApprovalRequest | None:
        """The user answered (or dismissed) a request here: stop showing it."""
        request = self.pending.pop(request_id, None)
        if request is not None:
            self._changed()
        return request

    # -- events --------------------------------------------------------------------------

    def apply(self, event: Event) -> bool:
        """Fold one event in; False when it was a duplicate or changed nothing.

        An impossible sequence is a gap, never a new normal: a `seq` far ahead of the
        watermark (one bad number would make every later event look old) is not adopted
        (`resync_wanted` "gap": the router catches up); numbering that started over without a
        new replay epoch (a seq far behind, or a turn starting under an old number while
        idle: no duplicate is that) resets the watermark and asks for a rebuild from a
        snapshot ("restart").
        """
        seq = event.seq
        if seq is not None:
            if seq <= self.last_seq:
                restarted = self.last_seq - seq > SEQ_WINDOW or (
                    event.type == "message.start" and not self.running
                )
                if not restarted:
                    return False  # a duplicate (replay overlap, a frame sent twice)
                self.resync_wanted = "restart"
            elif self.last_seq and seq - self.last_seq > SEQ_WINDOW:
                self.resync_wanted = self.resync_wanted or "gap"
                return False
            self.last_seq = seq
        handler = _HANDLERS.get(event.type)
        if handler is None:
            return False
        self._touched = None
        was_running = self.running
        changed = handler(self, event.payload)
        if changed:
            self.text_grew = was_running and event.type in _GROWS_TEXT
            try:
                self._changed(self._touched)
            finally:
                self.text_grew = False
        self._touched = None
        return changed

    def _on_start(self, payload: dict[str, Any]) -> bool:
        self.running = True
        self._started_at = self._now()
        self._usage_base = dict(self.usage)
        self._completed = False
        self._failed = None
        current = self.streaming_message
        if current is None or current.text or current.tools:
            self._seal(rs.COMPLETE)
            self.messages.append(new := self._new_assistant())
            self._touched = (new,) if current is None else (current, new)
        else:
            self._touched = (current,)
        return True

    def _on_delta(self, payload: dict[str, Any]) -> bool:
        text = _text(payload.get("text"))
        if not text:
            return False
        if self._completed and self.streaming_message is None:
            # Text after message.complete and before the next message.start: out of order
            # (every turn starts with message.start). Not a new bubble that streams for ever.
            self.resync_wanted = self.resync_wanted or "gap"
            return False
        self.running = True
        self._live().text += text
        return True

    def _on_thinking(self, payload: dict[str, Any]) -> bool:
        # Hermes' spinner text: each one replaces the last, "" clears it. Never reasoning.
        text = _text(payload.get("text")).strip()
        if text == self.status_text:
            return False
        self.status_text = text
        return True

    def _on_reasoning(self, payload: dict[str, Any]) -> bool:
        text = _text(payload.get("text"))
        if not text:
            return False
        self._live().thinking += text
        return True

    @staticmethod
    def _on_request_event(etype: str, conv: Conversation, payload: dict[str, Any]) -> bool:
        return conv._on_request(etype, payload)

    def _on_request(self, etype: str, payload: dict[str, Any]) -> bool:
        kind = REQUEST_EVENTS[etype]
        request = request_from(kind, payload, self._mint(kind))
        if request.request_id in self.pending:
            return False  # the same request again (replay, snapshot then event)
        self.pending.pop(f"{self.key}:waiting", None)
        self.pending[request.request_id] = request
        return True

    def _on_server_request(self, payload: dict[str, Any]) -> bool:
        # Hermes 0.22 asks by a server->client request, keyed by its JSON-RPC id: the same
        # request seen again (buffered during a reattach, then in the snapshot) shows once.
        request = server_request(payload)
        if request is None or request.request_id in self.pending:
            return False
        self.pending.pop(f"{self.key}:waiting", None)
        self.pending[request.request_id] = request
        return True

    def _on_request_cancel(self, payload: dict[str, Any]) -> bool:
        # The gateway withdrew it (interrupted, timed out, answered elsewhere).
        raw = payload.get("id")
        return self.pending.pop(str(raw), None) is not None if raw else False

    def adopt_requests(self, snapshot: dict[str, Any]) -> None:
        """What a snapshot says the agent waits on, when the rest of it is not loaded (the
        session caught up by replay): a request asked while offline is never sent again,
        only listed there (0.22's `open_requests`)."""
        if snapshot.get("running") is not True:
            return
        before = dict(self.pending)
        self._adopt_pending(snapshot)
        if self.pending != before:
            self._changed()

    def _on_expire(self, payload: dict[str, Any]) -> bool:
        request_id = _text(payload.get("request_id"))
        return self.pending.pop(request_id, None) is not None

    def _on_info(self, payload: dict[str, Any]) -> bool:
        self._touched = ()  # no bubble changes: only the session's info (no whole list sent)
        usage = payload.get("usage")
        if isinstance(usage, dict) and usage:
            self.usage = dict(usage)  # 0.22's session.info carries the session's usage too
        merged = {**self.info, **payload}
        if merged == self.info:
            return False
        self.info = merged
        return True

    def _on_complete(self, payload: dict[str, Any]) -> bool:
        final = _text(payload.get("text"))
        status = _text(payload.get("status")) or rs.COMPLETE
        status = status if status in rs.ENDED else rs.COMPLETE
        failed = self._failed
        cause = ""
        streamed = self.streaming_message.text if self.streaming_message is not None else ""
        if status == rs.FAILED and failed is None and final and final != streamed:
            # Hermes says why in the text ("Error: <cause>", "HTTP 401: ..."): that is the
            # cause, not the reply; the reply keeps what streamed.
            cause, final = final.removeprefix(rs.HERMES_ERROR_PREFIX).strip(), ""
        elif (
            status == rs.FAILED and failed is not None and final.startswith(rs.HERMES_ERROR_PREFIX)
        ):
            return self._end_failed(failed)  # the `error` event said it already
        if self.streaming_message is None and failed is not None:
            # The end of a turn an `error` event already failed: that reply, not a new one.
            if final and not failed.text:
                failed.text = final
            return self._end_failed(failed)
        if self.streaming_message is None and final and self._last_reply_text() == final:
            # A repeated completion (no seq on legacy gateways): the bubble is already final.
            self.running = False
            return False
        msg = self._live()
        self.compacting = self._compress_asked
        if self._started_at is not None:
            msg.duration, self._started_at = max(0.0, self._now() - self._started_at), None
        if final and payload.get("truncated") is not True:
            # The server's full text is authoritative: it heals anything lost while detached.
            # A text the gateway had to cut to fit one frame is not: keep what streamed.
            msg.text = final
        reasoning = _text(payload.get("reasoning"))
        if reasoning and not msg.thinking.strip():
            msg.thinking = reasoning  # deltas lost while detached: the final field has it
        usage = payload.get("usage")
        base, self._usage_base = self._usage_base, None
        if isinstance(usage, dict):
            msg.usage = reply_usage(usage, base)
            if usage:
                self.usage = dict(usage)  # the authoritative final figure of the turn
        if status == rs.INTERRUPTED and self._stopping:
            status = rs.STOPPED
        msg.status = status
        msg.cause = cause if status == rs.FAILED else ""
        msg.streaming = False
        self.running = False
        self._completed = True
        self._turn_over()
        self._touched = (msg,)
        return True

    def _last_reply_text(self) -> str | None:
        for msg in reversed(self.messages):
            if msg.role is Role.ASSISTANT:
                return msg.text
            if msg.role is Role.USER:
                return None
        return None

    def _on_error(self, payload: dict[str, Any]) -> bool:
        # One failed turn, one presentation: the reply itself says it failed and why (no
        # separate notice, no second empty bubble when the turn's end follows).
        message = _text(payload.get("message")) or "the agent reported an error"
        reply = self.streaming_message or self._failed
        if reply is None:
            # The agent could not start: no message.start came, so no bubble holds the turn.
            reply = self._new_assistant()
            self.messages.append(reply)
        elif reply is self._failed and reply.cause == message:
            return False  # the same error again (a replay)
        reply.streaming = False
        reply.status = rs.FAILED
        reply.cause = message
        self._touched = (reply,)
        self._failed = reply
        if self.running:
            self.running = False
            self._turn_over()
        return True

    def _end_failed(self, reply: ChatMessage) -> bool:
        self.running = False
        self._completed = True
        self._failed = None
        self._touched = (reply,)
        return True

    def _on_status(self, payload: dict[str, Any]) -> bool:
        self._touched = ()  # no bubble changes: only the session's info (no whole list sent)
        text = _text(payload.get("text")) or _text(payload.get("kind"))
        # A late one (after the answer, or after the turn) must not stick on the status line.
        asked = self.running or self._compress_asked
        compacting = self._compress_asked or (
            _text(payload.get("kind")) in COMPACTING_KINDS and asked
        )
        if text == self.status_text and compacting == self.compacting:
            return False
        self.status_text, self.compacting = text, compacting
        return True

    def set_compacting(self, on: bool) -> None:
        """This client asked the gateway to compress (on) or it answered (off)."""
        self._compress_asked = on
        if on and not self.compacting:
            self.compacting = True
            if not self.running:  # a finished turn's last spinner text is not this
                self.status_text = COMPACTING_TEXT
            self._changed()
        elif not on and self.compacting:
            self.compacting, self.status_text = False, "" if not self.running else self.status_text
            self._changed()

    def _on_interim(self, payload: dict[str, Any]) -> bool:
        self._touched = ()  # no bubble changes: only the session's info (no whole list sent)
        # What the agent says beside its tool calls while it works: the status line, never
        # the reply (streamed text is in the reply already; the rest is commentary).
        text = " ".join(_text(payload.get("text")).split())
        if not text or text == self.status_text:
            return False
        self.status_text = text
        return True

    def _on_usage(self, payload: dict[str, Any]) -> bool:
        self._touched = ()  # no bubble changes: only the session's info (no whole list sent)
        usage = payload.get("usage")
        if not isinstance(usage, dict) or not usage or usage == self.usage:
            return False
        self.usage = dict(usage)  # each tick is the whole snapshot
        return True

    def _on_subagent(self, etype: str, payload: dict[str, Any]) -> bool:
        self._touched = ()  # no bubble changes: only the session's info
        return fold_event(self.subagents, etype, payload)

    # -- asked of the gateway (the agent's background work, its usage) -----------------------

    def adopt_roster(self, result: Any) -> None:
        """The gateway's live subagent roster, asked after a (re)connect."""
        if fold_roster(self.subagents, result):
            self._changed(())

    def mark_stopping(self, subagent_id: str, stopping: bool = True) -> None:
        agent = self.subagents.get(subagent_id)
        if agent is not None and agent.running and agent.stopping != stopping:
            self.subagents[subagent_id] = dataclasses.replace(agent, stopping=stopping)
            self._changed(())

    def set_processes(self, processes: tuple[BackgroundProcess, ...]) -> None:
        if processes != self.processes:
            self.processes = processes
            self._changed(())

    def adopt_usage(self, usage: Any, note: str) -> None:
        """`session.usage`'s answer, asked after a resume or reconnect: the context meter's
        figure, or (`note`) why there is none."""
        changed = False
        if isinstance(usage, dict) and context_of(usage)[0] is not None and usage != self.usage:
            self.usage = dict(usage)
            changed = True
        if note != self.context_note:
            self.context_note = note
            changed = True
        if changed:
            self._changed(())

    def _on_todos(self, payload: dict[str, Any]) -> bool:
        self._touched = ()  # no bubble changes: only the session's info (no whole list sent)
        state = todo_state(payload)
        if state is None:
            return False
        items, revision = state
        if revision < self._todo_revision:
            return False  # older than the list shown (revisions only grow)
        self._todo_revision = revision
        if items == self.todos:
            return False
        self.todos = items
        return True

    def _on_title(self, payload: dict[str, Any]) -> bool:
        self._touched = ()  # no bubble changes: only the session's info (no whole list sent)
        title = _text(payload.get("title"))
        if not title or title == self.title:
            return False
        self.title = title
        return True

    def _on_tool(self, kind: str, payload: dict[str, Any]) -> bool:
        msg = self._live()
        tool_id = _text(payload.get("tool_id")) or _text(payload.get("id"))
        name = _text(payload.get("name")) or "tool"
        call = next((t for t in msg.tools if tool_id and t.id == tool_id), None)
        if call is None:
            # tool.generating has no id yet; the following tool.start adopts that row.
            call = next((t for t in msg.tools if not t.id and t.name == name and not t.done), None)
        if call is None:
            call = ToolCall(id=tool_id, name=name)
            msg.tools.append(call)
        elif tool_id and not call.id:
            call.id = tool_id
        context = payload.get("args_text") or payload.get("context")
        if isinstance(context, str) and context:
            call.args = context
        if kind == "progress":
            preview = _text(payload.get("preview")) or _text(payload.get("text"))
            if preview:
                call.output = preview
        if kind == "complete":
            result = payload.get("result_text") or payload.get("summary") or payload.get("result")
            if result is not None:
                call.output = result if isinstance(result, str) else json.dumps(result)
            call.done = True
            # Hermes 0.22 reports a failure inside the tool's own result object.
            inner = payload.get("result")
            failure = inner.get("error") if isinstance(inner, dict) else None
            call.error = bool(payload.get("error")) or bool(failure)
            if isinstance(failure, str) and failure.strip():
                call.output = failure
            todos = payload.get("todos")
            if isinstance(todos, list):
                # 0.19 / 0.20.1 send the todo tool's list here (0.22: todo.updated); it has no
                # revision, so it is as new as the list shown.
                self._on_todos({"todos": todos, "revision": max(self._todo_revision, 0)})
            if not call.error:
                record_tool_change(call, payload)
        return True

    # -- load errors ---------------------------------------------------------------------

    @property
    def load_error(self) -> str:
        """Why this chat's history could not be loaded ("" when it was, or not yet tried)."""
        for msg in self.messages:
            if msg.id == self._load_error_id:
                return msg.text
        return ""

    def show_load_error(self, text: str) -> None:
        """Say in the chat itself why its history is not shown (not an empty chat)."""
        self.messages = [m for m in self.messages if m.id != self._load_error_id]
        self.messages.insert(
            0,
            ChatMessage(
                id=self._load_error_id,
                role=Role.SYSTEM,
                text=text,
                created_at=self._now(),
                status="error",
            ),
        )
        self._changed()

    @property
    def _load_error_id(self) -> str:
        return f"{self.key}:load-error"

    # -- snapshots -----------------------------------------------------------------------

    def load_snapshot(self, snapshot: dict[str, Any], *, keep_messages: bool = False) -> None:
        """Adopt an activate/resume snapshot.

        Without `keep_messages` the history is rebuilt from the snapshot. Either way an
        in-progress reply is set to `inflight.assistant` (what the gateway has so far), so text
        lost while detached comes back and text already shown is not doubled; later deltas
        append to it. A snapshot that is idle clears a stale busy state.
        """
        self.resync_wanted = ""  # a snapshot is the re-sync
        self._completed = False
        running = snapshot.get("running") is True
        inflight = snapshot.get("inflight")
        inflight = inflight if isinstance(inflight, dict) else None
        messages = snapshot.get("messages")
        info = snapshot.get("info")
        if isinstance(info, dict):
            self.info = {**self.info, **info}
            usage = info.get("usage")
            if isinstance(usage, dict) and usage:
                self.usage = dict(usage)
        # The gateway's own list when it keeps one (0.22 `todo_state`): authoritative.
        todos = todo_state(snapshot.get("todo_state"))
        if todos is not None:
            self.todos, self._todo_revision = todos
        if not keep_messages and isinstance(messages, list):
            # Local bubbles survive; a load error does not (the history is here now).
            local = [m for m in self.messages if m.role is Role.USER and m.delivery in _UNSETTLED]
            start = snapshot.get("history_start")
            start = max(0, start if isinstance(start, int) and not isinstance(start, bool) else 0)
            if start > 0:
                # A reply cut by the window's edge comes whole with the older page.
                skip = _reply_rows(messages)
                messages, start = messages[skip:], start + skip
            # Shown from the cache, its older bubbles not read yet: those the history reaches
            # back to are read now, so what it lacks carries over from them as from a chat
            # seeded whole (a long chat's first screen did not wait for them).
            self._fill_cached(start)
            shown = self.messages
            self.messages = self._rebuild(messages, start)
            self.history_start = start
            self._window = None
            self._cache, self._cache_floor = None, 0  # the gateway's history from here on
            self._keep_unanswered(shown, running)
            self.messages.extend(local)
        if running:
            self.running = True
            if inflight is not None:
                self._adopt_inflight(inflight)
            self._adopt_pending(snapshot)
        else:
            # Idle on the server: whatever we thought was streaming has ended.
            self.running = False
            self._seal(rs.INTERRUPTED, rs.GATEWAY_WENT_AWAY)
            self._turn_over()
        self._changed()

    def _adopt_pending(self, snapshot: dict[str, Any]) -> None:
        """Make `pending` what a running snapshot says the agent waits on.

        0.20.1 names its open approval and clarify (`pending_approval`, `pending_clarify`):
        those are shown (once, by request id) and any other approval/clarify is gone.
        0.19 names none: status "waiting" says a clarify/sudo/secret is open; a card already
        shown stays, and with none shown the user is told what the app cannot show.
        """
        listed = {r.request_id: r for r in snapshot_requests(snapshot, self.key)}
        reports = reports_pending(snapshot)
        waiting = snapshot.get("status") == "waiting"
        kept: dict[str, ApprovalRequest] = {}
        for rid, request in self.pending.items():
            if rid in listed or request.kind == WAITING_KIND or request.reply_to:
                # Asked as a server request: such a gateway lists every open one, so one
                # not listed is gone.
                continue
            if request.kind in BLOCKING_KINDS:
                # Not listed: still open only if the gateway says something blocks and it
                # cannot say which (no field for this kind).
                if waiting and not (reports and request.kind == "clarify"):
                    kept[rid] = request
            elif not request.server_id:
                # An approval without a request id (0.19): that gateway cannot list it, so
                # its card stays until the turn ends (answering still works there). Gateways
                # that give approvals ids list the open ones in the snapshot.
                kept[rid] = request
        kept.update(listed)
        # "waiting" with nothing to show: the notice. Not when the gateway listed what it
        # waits on (0.22's open approval makes the status "waiting" too).
        if waiting and not listed and not any(r.kind in BLOCKING_KINDS for r in kept.values()):
            notice = waiting_request(self.key)
            kept[notice.request_id] = notice
        self.pending = kept

    def _adopt_inflight(self, inflight: dict[str, Any]) -> None:
        user = _text(inflight.get("user"))
        assistant = _text(inflight.get("assistant"))
        if user and not self._has_user_turn(user):
            self.messages.append(
                ChatMessage(
                    id=self._mint("user"),
                    role=Role.USER,
                    text=user,
                    created_at=self._now(),
                    delivery=DeliveryState.CONFIRMED,
                )
            )
        msg = self._live()
        msg.text = assistant
        msg.streaming = True

    def _keep_unanswered(self, shown: list[ChatMessage], running: bool) -> None:
        """Put back, after its prompt, a reply that did not complete and that the rebuilt
        history lacks (its prompt followed by another prompt, or last): Hermes keeps no
        failed reply (0.19 keeps the prompt alone) and no partial answer when it goes away
        mid-reply. The words shown stay, with the state they ended in; one still streaming
        while the gateway is idle was cut by the gateway going away."""
        kept: list[tuple[str, ChatMessage]] = []  # (its prompt's text, the reply), in order
        prompt: ChatMessage | None = None
        for m in shown:
            if m.role is Role.USER:
                prompt = m
            elif m.role is Role.ASSISTANT and prompt is not None:
                if m.streaming and m.text and not running:
                    m.streaming, m.status, m.cause = False, rs.INTERRUPTED, rs.GATEWAY_WENT_AWAY
                if not m.streaming and m.status in rs.UNFINISHED:
                    kept.append((prompt.text.strip(), m))
                prompt = None  # a turn's first reply is its reply
        if not kept:
            return
        out: list[ChatMessage] = []
        rows = self.messages
        at = 0
        for i, m in enumerate(rows):
            out.append(m)
            if m.role is not Role.USER:
                continue
            after = next((n for n in rows[i + 1 :] if n.role is not Role.SYSTEM), None)
            if after is not None and after.role is not Role.USER:
                continue  # answered in the history
            k = next((j for j in range(at, len(kept)) if kept[j][0] == m.text.strip()), None)
            if k is not None:
                out.append(kept[k][1])
                at = k + 1
        self.messages = out

    def _has_user_turn(self, text: str) -> bool:
        for msg in reversed(self.messages):
            if msg.role is Role.USER:
                return msg.text.strip() == text.strip()
        return False

    def prepend_history(self, rows: list[Any], start: int) -> int:
        """Older history rows (positions `start`...) go before the loaded ones; how many
        bubbles were added. Listeners are not told: the caller announces the new rows."""
        if not 0 <= start < self.history_start:
            return 0
        rows = rows[: self.history_start - start]
        if start > 0:
            # Rows of a reply begun on the page before: they come whole with that page.
            skip = _reply_rows(rows)
            rows, start = rows[skip:], start + skip
        older = self._bubbles(rows, start)
        self.messages[0:0] = older
        self.history_start = start
        if self._window is not None:
            self._window += len(older)
        return len(older)

    # -- the loaded window of a long history ------------------------------------------------

    @property
    def detached(self) -> bool:
        """Whether the window shown is far from the live end (newer rows not loaded)."""
        return self._window is not None

    @property
    def shown(self) -> list[ChatMessage]:
        """The messages a view shows: the window while detached, else all of them."""
        return self.messages if self._window is None else self.messages[: self._window]

    @property
    def gap(self) -> tuple[int, int] | None:
        """While detached, the history rows not loaded: (first, end) positions."""
        return None if self._window is None else (self._end_pos, self._tail_pos)

    @property
    def newer_replies(self) -> int:
        """While detached, the replies that came (or went on) in the hidden live end since it
        was hidden: what the user has not seen yet."""
        if self._window is None:
            return 0
        tail = self.messages[self._window :]
        seen = self._replies_seen
        return sum(
            m.role is Role.ASSISTANT and seen.get(m.id) != (len(m.text), m.streaming) for m in tail
        )

    def cached_part(self) -> tuple[int, list[ChatMessage]]:
        """The contiguous run that ends at the live end, and its first row's position."""
        if self._window is None:
            return self.history_start, self.messages
        return self._tail_pos, self.messages[self._window :]

    def places(self, start: int, messages: list[ChatMessage]) -> list[int]:
        """Where each of `messages` (a run from history row `start`) sits in the whole
        history: its first row's position (as its id says), so a cached message keeps the id
        it is shown with; one not a history row yet (a live reply) goes right after the last."""
        out: list[int] = []
        at = start
        for msg in messages:
            pos = self._place_of(msg)
            at = pos if pos is not None and pos >= at else at
            out.append(at)
            at += 1
        return out

    def drop_newest(self, keep: int, tail: int) -> int:
        """Hold at most `keep` window bubbles by dropping its newest ones (the user reads far
        up); the last `tail` bubbles stay, hidden, for live events. How many bubbles the
        view lets go (the hidden tail's included)."""
        window = len(self.messages) if self._window is None else self._window
        if window <= keep:
            return 0
        end = window
        if self._window is None:
            end = len(self.messages) - tail
            tail_pos = self._position(end) if end > keep else None
            if tail_pos is None:
                return 0  # no history row to restart from at the tail: stay whole
            self._tail_pos = tail_pos
            self._replies_seen = {
                m.id: (len(m.text), m.streaming)
                for m in self.messages[end:]
                if m.role is Role.ASSISTANT
            }
        end_pos = self._position(keep)
        if end_pos is None:
            return 0
        self._end_pos = end_pos
        del self.messages[keep:end]
        self._window = keep
        return window - keep

    def drop_oldest(self, keep: int) -> int:
        """Hold at most `keep` window bubbles by dropping its oldest ones (the user reads down
        again); they are fetched again by `prepend_history`. How many were dropped."""
        window = len(self.messages) if self._window is None else self._window
        cut = window - keep
        start = self._position(cut) if cut > 0 else None
        if start is None:
            return 0
        del self.messages[:cut]
        self.history_start = start
        if self._window is not None:
            self._window -= cut
        return cut

    def append_history(self, rows: list[Any], start: int) -> int:
        """Newer history rows (positions `start`...) go after the window; when they reach the
        tail the window joins it. How many bubbles the window gained (the tail's included).
        Listeners are not told: the caller announces the new rows."""
        if self._window is None or start != self._end_pos:
            return 0
        rows = rows[: self._tail_pos - start]
        if start + len(rows) < self._tail_pos:
            # A reply going on past the page comes whole with the next one.
            rows = rows[: len(rows) - _reply_rows(rows[::-1])]
        return self._join(self._bubbles(rows, start), start + len(rows))

    def _join(self, newer: list[ChatMessage], end: int) -> int:
        """`newer` (bubbles up to history row `end`) go after the window; at the tail the
        window joins it. How many bubbles the window gained (the tail's included)."""
        assert self._window is not None
        have = {m.id for m in self.messages[self._window :]}
        newer = [m for m in newer if m.id not in have]
        self.messages[self._window : self._window] = newer
        self._window += len(newer)
        self._end_pos = end
        if self._end_pos < self._tail_pos:
            return len(newer)
        gained = len(self.messages) - self._window + len(newer)
        self._window = None
        return gained

    def reattach(self) -> bool:
        """Drop the window and show the live end again (the session is opened anew)."""
        if self._window is None:
            return False
        del self.messages[: self._window]
        self.history_start = self._tail_pos
        self._window = None
        return True

    def _position(self, index: int) -> int | None:
        """The history position of bubble `index`, read from its id (`key:position`); None
        for a bubble that is not a history row (local, live)."""
        if not 0 <= index < len(self.messages):
            return None
        return self._place_of(self.messages[index])

    def _place_of(self, msg: ChatMessage) -> int | None:
        # `_bubbles` names each bubble by its first row's position: the id is the record.
        tail = msg.id[len(self.key) + 1 :] if msg.id.startswith(f"{self.key}:") else ""
        return int(tail) if tail.isdigit() else None

    def _rebuild(self, messages: list[Any], start: int = 0) -> list[ChatMessage]:
        """Snapshot rows (from position `start`) as bubbles; what the snapshot lacks (times,
        tool output, usage) is carried over from the bubble already shown for the same row."""
        out = self._bubbles(messages, start)
        if start >= self.history_start:
            self._carry_over(out, start)
        return out

    def bubbles_of(self, rows: list[Any]) -> list[ChatMessage]:
        """The whole history's `rows` as this chat shows them (nothing shown changes)."""
        return self._bubbles(rows, 0)

    def position_of(self, msg: ChatMessage) -> int | None:
        """The history row `msg` (a bubble of `bubbles_of` or one shown) starts at, if any."""
        return self._place_of(msg)

    def _bubbles(self, messages: list[Any], start: int) -> list[ChatMessage]:
        """Rows as bubbles: one per reply, its tool rows and reasoning folded in.

        Hermes lists a reply as assistant and tool rows; live, the same reply is one bubble
        whose text is the final answer. A bubble's id is `key:row`, its first row's place in
        the whole history: the same whichever page brought it, never another bubble's.
        """
        out: list[ChatMessage] = []
        reply: ChatMessage | None = None
        for at, raw in enumerate(messages, start):
            data = raw if isinstance(raw, dict) else {}
            role = _ROLES.get(_text(data.get("role")), Role.SYSTEM)
            text = _text(data.get("text")) or _text(data.get("content"))
            if data.get("truncated") is True and text:
                text += cut_note(data.get("text_chars"))
            if role in (Role.ASSISTANT, Role.TOOL):
                if reply is None:
                    reply = ChatMessage(id=f"{self.key}:{at}", role=Role.ASSISTANT)
                    out.append(reply)
                if role is Role.TOOL:
                    call = ToolCall(id="", name=_text(data.get("name")) or "tool", done=True)
                    call.args = _text(data.get("context"))
                    record_tool_change(call, data)  # 0.20.1 keeps the tool's args
                    reply.tools.append(call)
                    continue
                if text.strip():
                    reply.text = text  # the last text of a reply is its answer
                status = _text(data.get("status"))
                if status in rs.UNFINISHED:
                    # The embedded gateway keeps how a reply ended (a crash reads interrupted).
                    reply.status = status
                thinking = data.get("reasoning") or data.get("reasoning_content")
                if isinstance(thinking, str) and thinking.strip():
                    sep = "\n\n" if reply.thinking else ""
                    reply.thinking += sep + thinking
                reply.created_at = _stamp(data) or reply.created_at
                continue
            reply = None
            msg = ChatMessage(id=f"{self.key}:{at}", role=role, text=text)
            msg.created_at = _stamp(data)
            if role is Role.USER:
                msg.delivery = DeliveryState.CONFIRMED
            out.append(msg)
        return out

    def _carry_over(self, rebuilt: list[ChatMessage], start: int = 0) -> None:
        """Give rebuilt bubbles what the same bubble already shown had (times, tools, usage).

        Bubbles are matched by role and text in order, not by position: what is shown may be
        only the end of the history (the local cache) or start elsewhere. `start`, the
        history row the rebuilt bubbles start at, is a hint: matching starts at the first
        shown bubble at or after that row (a reply of several rows is one bubble, so a count
        of rows is none). A prompt sent from here is shown under its local id until the
        history names it (0.19 never does): once confirmed it is that history row too, and
        its time (0.19 keeps none for a prompt) carries over; one not yet settled is not.
        """
        shown = [
            m
            for m in self.messages
            if not (m.id.startswith(LOCAL_PREFIX) and m.delivery in _UNSETTLED)
        ]
        j = next((i for i, m in enumerate(shown) if (self._place_of(m) or 0) >= start), 0)
        if len(rebuilt) > len(shown) + _MATCH_WINDOW:
            # Shown is only the end of the history: match against the end.
            rebuilt = rebuilt[len(rebuilt) - len(shown) - _MATCH_WINDOW :]
            j = 0
        for new in rebuilt:
            k = next(
                (i for i in range(j, min(len(shown), j + _MATCH_WINDOW)) if _same(new, shown[i])),
                None,
            )
            if k is None:
                continue
            old, j = shown[k], k + 1
            new.created_at = new.created_at or old.created_at
            if new.role is Role.ASSISTANT:
                new.usage = new.usage or old.usage
                new.duration = old.duration if new.duration is None else new.duration
                new.thinking = new.thinking or old.thinking
                if [t.name for t in new.tools] == [t.name for t in old.tools]:
                    new.tools = old.tools  # same calls: keep their output and ids
                if _unfinished_pair(new, old):
                    # Every word that was shown stays; the state the client saw wins over
                    # a history that cannot tell (stopped vs interrupted, the cause).
                    new.text = rs.longer_shown(old.text, new.text)
                    if old.status in rs.UNFINISHED:
                        new.status, new.cause = old.status, old.cause
                    elif new.status == rs.INTERRUPTED:
                        new.cause = new.cause or rs.GATEWAY_WENT_AWAY  # it streamed here

    # -- helpers -------------------------------------------------------------------------

    def _turn_over(self) -> None:
        """The turn ended: nothing blocks on the user any more, the spinner line goes."""
        self.turns_ended += 1
        self._stopping = False
        self.pending.clear()
        self.status_text = ""

    def _live(self) -> ChatMessage:
        current = self.streaming_message
        if current is None:
            current = self._new_assistant()
            self.messages.append(current)
        return current

    def _new_assistant(self) -> ChatMessage:
        return ChatMessage(
            id=self._mint("reply"), role=Role.ASSISTANT, created_at=self._now(), streaming=True
        )

    def _seal(self, status: str, cause: str = "") -> None:
        current = self.streaming_message
        if current is not None:
            current.streaming = False
            current.status = rs.STOPPED if status == rs.INTERRUPTED and self._stopping else status
            current.cause = "" if current.status == rs.STOPPED else cause

    def _mint(self, kind: str) -> str:
        return f"{self.key}:{kind}:{next(self._ids)}"

    def _changed(self, only: tuple[ChatMessage, ...] | None = None) -> None:
        self.changed_only = only
        try:
            self._listeners.emit(lambda listener: listener(self))
        finally:
            self.changed_only = None


# Events that, while a turn runs, change nothing but the live reply's text.
_GROWS_TEXT = frozenset({"message.delta", "reasoning.delta"})

_HANDLERS: dict[str, Callable[[Conversation, dict[str, Any]], bool]] = {
    "message.start": Conversation._on_start,
    "message.delta": Conversation._on_delta,
    "thinking.delta": Conversation._on_thinking,
    "reasoning.delta": Conversation._on_reasoning,
    "session.info": Conversation._on_info,
    "message.complete": Conversation._on_complete,
    "error": Conversation._on_error,
    "status.update": Conversation._on_status,
    "message.interim": Conversation._on_interim,
    "session.usage": Conversation._on_usage,
    "todo.updated": Conversation._on_todos,
    **{etype: partial(lambda e, c, p: c._on_subagent(e, p), etype) for etype in SUBAGENT_EVENTS},
    "session.title": Conversation._on_title,
    "tool.generating": lambda c, p: c._on_tool("generating", p),
    "tool.start": lambda c, p: c._on_tool("start", p),
    "tool.progress": lambda c, p: c._on_tool("progress", p),
    "tool.complete": lambda c, p: c._on_tool("complete", p),
    # reasoning.available carries the whole answer on 0.19: never rendered, not even as thinking.
    **{etype: partial(Conversation._on_request_event, etype) for etype in REQUEST_EVENTS},
    **{etype: Conversation._on_expire for etype in EXPIRE_EVENTS},
    SERVER_REQUEST_EVENT: Conversation._on_server_request,
    REQUEST_CANCEL_EVENT: Conversation._on_request_cancel,
}


# How far ahead a rebuilt bubble looks for its shown twin (bounded: long histories stay fast).
_MATCH_WINDOW = 8


def _leading_replies(bubbles: list[ChatMessage]) -> int:
    """How many bubbles at the start of `bubbles` are replies (their prompt is before them),
    0 when all are: as `_reply_rows`, for a page of cached bubbles."""
    for n, msg in enumerate(bubbles):
        if msg.role is not Role.ASSISTANT:
            return n
    return 0


def _reply_rows(rows: list[Any]) -> int:
    """How many rows at the start of `rows` are a reply's (assistant, tool): a reply begun
    before them, when a page starts there. 0 when all are (one reply longer than a page is
    shown in parts rather than not at all)."""
    for n, raw in enumerate(rows):
        role = raw.get("role") if isinstance(raw, dict) else None
        if role not in (Role.ASSISTANT.value, Role.TOOL.value):
            return n
    return 0


def _same(new: ChatMessage, old: ChatMessage) -> bool:
    if new.role is not old.role:
        return False
    return (
        new.text.strip() == old.text.strip() or _unfinished_pair(new, old) or _streamed_on(new, old)
    )


def _streamed_on(new: ChatMessage, old: ChatMessage) -> bool:
    """A reply that was streaming here when the link went (its words so far shown) and the
    history's copy of it, which went on while the link was down (0.19 keeps no times: the
    shown one's carries over)."""
    return (
        old.role is Role.ASSISTANT
        and old.streaming
        and bool(old.text.strip())
        and new.text.strip().startswith(old.text.strip())
    )


def _unfinished_pair(new: ChatMessage, old: ChatMessage) -> bool:
    """A reply the history holds cut (a crash saved less than was shown) and its shown copy:
    one of them did not complete and the history's text is a beginning of the shown one."""
    if new.role is not Role.ASSISTANT or old.role is not Role.ASSISTANT:
        return False
    cut = new.status in rs.UNFINISHED or old.status in rs.UNFINISHED
    return cut and (old.text.startswith(new.text) or new.text.startswith(old.text))


def _stamp(data: dict[str, Any]) -> float:
    """A wire row's time (seconds), when the gateway sends one."""
    for field in ("timestamp", "created_at", "ts"):
        value = data.get(field)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value / 1000 if value > 1e11 else value)
    return 0.0
