"""One profile's session list: summaries, running and unread marks, and the message cache."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from desktop.common.clock import Clock, TimerHandle
from desktop.core.chats.conversation import Conversation
from desktop.core.chats.reply_state import APP_WENT_AWAY, INTERRUPTED
from desktop.core.chats.versions import ReplyVersions
from desktop.core.disk.export import export_conversation
from desktop.core.disk.store import (
    CachedMessage,
    ListPlace,
    MessageRow,
    SearchHit,
    SentAttachments,
    Store,
    prompt_key,
)
from desktop.core.errors import StorageError
from desktop.core.keys import is_temp_key
from desktop.core.listeners import Notify
from desktop.core.models import ChatMessage, DeliveryState, Role, SessionSummary, ToolCall

log = logging.getLogger(__name__)

NEW_CHAT = "New chat"
# A reply still growing is written this often (seconds), marked STREAMING.
STREAM_SAVE_INTERVAL = 1.0
STREAMING = "streaming"
# A turn that ended is cached this long (seconds) after the event that ended it: writing a
# long reply and its search index (~1.5 ms) in that event held up the frame showing the
# reply's last words, and the next reply's first. Should the app go away meanwhile, its
# reply is in the store as it grew (`keep_streaming`); closing writes it at once.
TURN_CACHE_DELAY = 0.1
# Sessions read at start (the top of the list, the window's first screen of it many times
# over); the rest on `load_all`, once the window is painted.
FIRST_ROWS = 200
_ROLES = {r.value: r for r in Role}
# What the preview leaves out: marks, not characters of the text ("issue #28", "file_name.py",
# "a > b", "C#" and "5 * 3" keep theirs). A mark with a space on both sides is the text's own
# (CommonMark: neither left- nor right-flanking), unless it starts a line (a list item).
# (Each branch tests its first character before any look-behind: a look-behind tried at every
# space made 10,000 listed chats ~30 ms slower to merge.)
_MARKUP = re.compile(
    r"(?=[!\[*`~_#>]|^[ \t])(?:"  # (a quick test: where none of the marks can start)
    r"!?\[([^\]]*)\]\([^)]*\)"  # a link or an image: its text stays
    r"|(?=[*`])(?:(?<![ \t*`])[*`]+|[*`]+(?=[^\s*`]))|~~+"  # emphasis, code, strike-through
    r"|(?=_)(?:(?<!\w)_+(?=[^\s_])|(?<=[^\s_])_+(?!\w))"  # underscores around words only
    r"|^[ \t]{0,3}(?:#{1,6}(?=[ \t]|$)|>[> \t]*))",  # a heading's or a quote's mark
    re.MULTILINE,
)


PREVIEW_CHARS = 120
# How much of a text the preview is made from: its start, with room for the marks and links
# taken out (a reply can be tens of kilobytes: reducing all of it took ~0.3 ms a turn).
PREVIEW_SOURCE = 16 * PREVIEW_CHARS


def _one_plain_line(text: str) -> str:
    return " ".join(_MARKUP.sub(lambda m: m.group(1) or "", text).split())


def preview(text: str) -> str:
    """One line of plain text for the session list: markdown marks and links reduced."""
    source = text[:PREVIEW_SOURCE]
    plain = _one_plain_line(source)
    if len(plain) < PREVIEW_CHARS and len(text) > len(source):
        plain = _one_plain_line(text)  # mostly marks
    return plain[:PREVIEW_CHARS]


def gateway_title(text: str) -> str:
    """A title the gateway gave, as the list and header show it: one line, markdown marks out
    (a model asked for a title may answer "**Kitchen tiles**"; Hermes 0.20.1 and 0.22 keep it
    so)."""
    return _one_plain_line(text[:PREVIEW_SOURCE])


def title_from(text: str) -> str:
    """A session title made from its first prompt (its words: markdown marks out)."""
    line = _one_plain_line(text[:PREVIEW_SOURCE])
    return (line[:48] + "…") if len(line) > 48 else (line or NEW_CHAT)


@dataclass(slots=True)
class SessionState:
    """What the client knows of a session beyond the store row."""

    summary: SessionSummary
    running: bool = False
    unread: int = 0
    # The title the user gave it ("" for none): no gateway title (an auto-title finishing after
    # the rename, a stale session.info or session.list) replaces it.
    user_title: str = ""
    # The summary as last shown, made from `summary` (the two, in that order): the list and
    # the tabs ask for a running chat's row at every turn's start and end in any chat, and a
    # copy of a summary costs ~35 us (20 chats streaming made 22,000 of them in 10 s).
    shown: tuple[SessionSummary, SessionSummary] | None = None


def _shown(state: SessionState) -> SessionSummary:
    summary = state.summary
    if summary.running == state.running and summary.unread == state.unread:
        return summary  # frozen, shown as it is: no copy per idle chat (10,000 cost 40 ms)
    made = state.shown
    if made is not None and made[0] is summary:
        view = made[1]
        if view.running == state.running and view.unread == state.unread:
            return view
    view = replace(summary, running=state.running, unread=state.unread)
    state.shown = (summary, view)
    return view


class SessionIndex:
    """Owns the session list of one profile and its rows in the store.

    It also knows which sessions are on screen, each in some viewer (the main window's front
    tab, a chat's own window): a turn ending in a session no viewer shows marks it unread.
    Every change that the list shows ends with `emit()` (an `on_sessions` listener call).
    """

    def __init__(
        self,
        profile_id: str,
        store: Store,
        clock: Clock,
        notify: Notify,
        *,
        first_rows: int = FIRST_ROWS,
    ) -> None:
        self._id = profile_id
        self._store = store
        self._clock = clock
        self._notify = notify
        # When each session's growing reply was last written (see `keep_streaming`).
        self._streamed_at: dict[str, float] = {}
        # The listed sessions read so far: always the top of the stored list (no gaps), so
        # rows read later only come below them; `_after` is where the unread rest starts.
        self._sessions: dict[str, SessionState] = {}
        self._after: ListPlace | None = None
        self._complete = False
        self._unsaid = False  # rows were read since listeners last heard the list
        # viewer (a window or its front tab) -> the session it shows; several may show one.
        self._viewers: dict[str, str] = {}
        # Sessions whose preview is their last message as this client has it (written live, or
        # from its cached messages): a `session.list` preview, which follows each gateway's own
        # rule (the last prompt, the first message), is taken only for the others, so the row
        # reads the same live and after a restart.
        self._own_preview: set[str] = set()
        self._preview_known: set[str] = set()  # whose entry in `_own_preview` is settled
        # The newest rows now (what the window shows first), the rest when `load_all` is
        # called or anything needs the whole list: 10,000 rows took ~0.15 s to read.
        self._read(limit=first_rows)
        self._cached: dict[str, list[CachedMessage]] = {}  # session key -> rows last stored
        # Turns that ended, cached TURN_CACHE_DELAY later: session key -> (its timer, the
        # conversation, when the turn ended: the chat's time in the list).
        self._after_turn: dict[str, tuple[TimerHandle, Conversation, float]] = {}
        # session key -> history row -> what the prompt there carried (loaded when first asked)
        self._sent: dict[str, dict[int, SentAttachments]] = {}
        self.versions = ReplyVersions(profile_id, store)  # earlier replies, by prompt row
        # Deleted on the gateway this run: a session.list fetched before the delete must not
        # bring them back (after a restart the gateway no longer lists them).
        self._deleted: set[str] = set()

    # -- reading ---------------------------------------------------------------------------

    def _read(self, *, limit: int | None = None, through: str | None = None) -> int:
        """Read stored rows below those read so far: `limit` of them, those down to session
        `through`, or all; returns how many were new."""
        if self._complete:
            return 0
        page = self._store.session_page(self._id, after=self._after, limit=limit, through=through)
        titles = page.user_titles
        sessions = self._sessions
        new = 0
        for summary in page.summaries:
            key = summary.key
            if key not in sessions:  # one changed here since keeps what it is now
                sessions[key] = SessionState(summary, user_title=titles.get(key, ""))
                new += 1
        if page.last is not None:
            self._after = page.last
        self._unsaid = self._unsaid or new > 0
        if through is None and (limit is None or len(page.summaries) < limit):
            self._complete = True
        return new

    def _own(self, key: str) -> None:
        """`key`'s preview is its last message as this client has it."""
        self._own_preview.add(key)
        self._preview_known.add(key)

    def _learn_previews(self, keys: list[str]) -> None:
        """Which of `keys` have messages cached here (their preview is their own), each read
        once: for the rows of a `session.list` page, not for the whole list at start."""
        unknown = [k for k in keys if k not in self._preview_known]
        if unknown:
            self._own_preview |= self._store.keys_with_messages(self._id, unknown)
            self._preview_known.update(unknown)

    def load_all(self) -> None:
        """Read the rest of the stored list; listeners hear of the whole list if it holds
        rows they were not told of."""
        self._read()
        if self._unsaid:
            self.emit()

    @property
    def complete(self) -> bool:
        """Whether every stored session is read (else `summaries` holds the newest ones)."""
        return self._complete

    def _find(self, key: str) -> SessionState | None:
        """Session `key`'s state, its row read first (with those above it) if it was not."""
        state = self._sessions.get(key)
        if state is None and not self._complete and not is_temp_key(key):
            self._read(through=key)
            state = self._sessions.get(key)
        return state

    def summaries(self) -> list[SessionSummary]:
        """The list as shown: pinned first, then newest first, with running and unread marks
        (the newest rows only until `load_all`)."""
        items = [_shown(s) for s in self._sessions.values()]
        items.sort(key=lambda s: (s.pinned, s.updated_at), reverse=True)
        return items

    def in_list_order(self, keys: set[str]) -> list[str]:
        """Those of `keys` that are listed, in the list's order (see `summaries`)."""
        listed = [(k, s.summary) for k, s in self._sessions.items() if k in keys]
        listed.sort(key=lambda ks: (ks[1].pinned, ks[1].updated_at), reverse=True)
        return [k for k, _s in listed]

    def running_keys(self) -> set[str]:
        """The sessions with a turn running."""
        return {k for k, s in self._sessions.items() if s.running}

    def summary(self, key: str) -> SessionSummary | None:
        """One row of the list as shown (asked for, it is listed with the rows above it)."""
        state = self._find(key)
        return _shown(state) if state is not None else None

    def unread(self) -> int:
        """Replies not seen yet, over every listed session."""
        return sum(s.unread for s in self._sessions.values())

    def get(self, key: str) -> SessionState | None:
        return self._find(key)

    def __iter__(self) -> Iterator[str]:
        """The listed session keys, every stored one read (a copy: the list may change while
        iterating)."""
        self._read()
        return iter(list(self._sessions))

    def runtime_id(self, key: str) -> str | None:
        """The runtime id last stored for `key` (the router may know a newer one)."""
        state = self._find(key)
        return state.summary.runtime_id if state else None

    def emit(self) -> None:
        self._unsaid = False
        summaries = self.summaries()
        self._notify(lambda listener: listener.on_sessions(summaries))

    # -- user intents ----------------------------------------------------------------------

    def add(self, summary: SessionSummary) -> SessionState:
        """Start listing a session (not emitted: the caller decides when the list changes)."""
        state = self._sessions[summary.key] = SessionState(summary)
        return state

    def open(self, key: str) -> None:
        """`key` is opened (put on screen): its unread mark goes."""
        state = self._find(key)
        if state is not None and state.unread:
            state.unread = 0
            self.emit()

    def view(self, viewer: str, key: str | None) -> None:
        """`viewer` shows session `key` now (None: none of this profile's); what it showed
        before gathers unread marks again unless another viewer shows it too."""
        if key is None:
            self._viewers.pop(viewer, None)
            return
        self._viewers[viewer] = key
        self.open(key)

    def viewed(self, key: str) -> bool:
        """Whether some viewer shows `key` (a turn ending there is read as it ends)."""
        return key in self._viewers.values()

    def rename(self, key: str, title: str, *, user_title: str | None = None) -> bool:
        """Retitle `key` (and set the user's own title when given); False when it is not listed."""
        state = self._find(key)
        if state is None:
            return False
        state.summary = replace(state.summary, title=title)
        fields: dict[str, str] = {"title": title}
        if user_title is not None:
            state.user_title = fields["user_title"] = user_title
        if not is_temp_key(key):
            self._store.upsert_session(self._id, key, **fields)
        self.emit()
        return True

    def user_title(self, key: str) -> str:
        """The title the user gave `key` ("" for none)."""
        state = self._find(key)
        return state.user_title if state else ""

    def mark(self, key: str, *, pinned: bool | None = None, archived: bool | None = None) -> bool:
        """Pin or archive `key` (local marks, kept in the store); False when it is not listed."""
        state = self._find(key)
        if state is None:
            return False
        pinned = state.summary.pinned if pinned is None else pinned
        archived = state.summary.archived if archived is None else archived
        state.summary = replace(state.summary, pinned=pinned, archived=archived)
        if not is_temp_key(key):
            self._store.upsert_session(self._id, key, pinned=pinned, archived=archived)
        self.emit()
        return True

    def remove(self, key: str) -> bool:
        """Forget `key` and its cached rows (not emitted); False when it was not listed."""
        if self._find(key) is None:
            return False
        del self._sessions[key]
        self._own_preview.discard(key)
        self._preview_known.discard(key)
        self._cached.pop(key, None)
        if (ended := self._after_turn.pop(key, None)) is not None:
            ended[0].cancel()
        if not is_temp_key(key):
            self._store.delete_session(self._id, key)
        self._viewers = {v: k for v, k in self._viewers.items() if k != key}
        return True

    def forget_listed(self, key: str) -> None:
        """`key` was deleted on the gateway: never listed again from a `session.list` result."""
        self._deleted.add(key)

    def note_prompt(self, key: str, text: str) -> None:
        """A prompt was queued in `key`: it moves to the top, previewed, titled if untitled."""
        state = self._find(key)
        if state is None:
            return
        state.summary = replace(state.summary, preview=preview(text), updated_at=self._clock.wall())
        self._own(key)
        if state.summary.title in ("", NEW_CHAT):
            state.summary = replace(state.summary, title=title_from(text))
        self.emit()

    # -- gateway news ----------------------------------------------------------------------

    def turn_ended(self, key: str) -> None:
        """A turn ended in `key`: one unread mark unless some viewer shows it."""
        if self.viewed(key):
            return
        state = self._find(key)
        if state is not None:
            state.unread += 1
            self.emit()

    def follow(self, conv: Conversation) -> None:
        """Take a conversation's running state and title into the list."""
        key = conv.key
        self.keep_streaming(conv)
        state = self._find(key)
        if state is None:
            return
        if state.running != conv.running:
            state.running = conv.running
            self._notify(lambda listener: listener.on_running(key, conv.running))
            if not conv.running:
                ended = self._after_turn.get(key)
                if ended is not None:  # an end told again: its write still waits
                    timer = ended[0]
                else:
                    timer = self._clock.call_later(
                        TURN_CACHE_DELAY, lambda: self.cache_ended_turn(key)
                    )
                # (the conversation as it is now: a snapshot may have replaced the object)
                self._after_turn[key] = (timer, conv, self._clock.wall())
            self.emit()
        # The gateway's title: a session.title event, or Hermes' session.info (the stored title).
        title = gateway_title(conv.title or str(conv.info.get("title") or ""))
        if title and title != state.summary.title and not state.user_title:
            state.summary = replace(state.summary, title=title)
            self._store.upsert_session(self._id, key, title=title)
            self.emit()

    def merge_listed(self, rows: list[Any], *, emit: bool = True) -> int:
        """Merge a `session.list` result; a runtime id learned this run is kept.

        Rows that say nothing new are skipped without touching the store, so listing
        thousands of known sessions again costs a comparison each. Returns how many changed.
        """
        self._read()  # each row is compared with the stored one
        self._learn_previews([str(r["id"]) for r in rows if isinstance(r, dict) and r.get("id")])
        changed = 0
        for row in rows:
            if not isinstance(row, dict) or not row.get("id"):
                continue
            key = str(row["id"])
            if key in self._deleted:
                continue
            fields: dict[str, Any] = {
                "title": gateway_title(str(row.get("title") or "")),
                "preview": preview(str(row.get("preview") or "")),
                "message_count": int(row.get("message_count") or 0),
            }
            updated = row.get("updated_at") or row.get("last_active") or row.get("started_at")
            if isinstance(updated, int | float):
                fields["updated_at"] = float(updated)
            state = self._find(key)
            if state is not None and state.user_title:
                fields["title"] = state.user_title  # the user's rename wins
            if state is not None and key in self._own_preview:
                fields["preview"] = state.summary.preview  # its last message, as shown live
            if state is not None and all(
                getattr(state.summary, name) == value for name, value in fields.items()
            ):
                continue
            record = self._store.upsert_session(self._id, key, **fields)
            changed += 1
            if state is None:
                self._sessions[key] = SessionState(record.summary())
            else:
                state.summary = replace(
                    record.summary(), runtime_id=state.summary.runtime_id or record.runtime_id
                )
        if emit:
            self.emit()
        return changed

    def adopt(self, temp_key: str, real_key: str, runtime_id: str | None) -> None:
        """The gateway created `temp_key` as `real_key`: move its row, cache and viewers."""
        self._find(real_key)  # a stored row of that key is replaced, not read again later
        state = self._sessions.pop(temp_key, None)
        summary = replace(
            state.summary if state else SessionSummary(key=real_key, title=""),
            key=real_key,
            runtime_id=runtime_id,
        )
        self._sessions[real_key] = SessionState(
            summary,
            unread=state.unread if state else 0,
            user_title=state.user_title if state else "",
        )
        self._store.upsert_session(
            self._id,
            real_key,
            runtime_id=runtime_id,
            title=summary.title,
            preview=summary.preview,
            updated_at=summary.updated_at or self._clock.wall(),
            pinned=summary.pinned,
            archived=summary.archived,
            user_title=state.user_title if state else "",
        )
        self._store.rekey_session(self._id, temp_key, real_key)
        if temp_key in self._own_preview:
            self._own_preview.discard(temp_key)
            self._own(real_key)
        else:
            self._preview_known.add(real_key)  # no messages are kept under a temporary key
        for viewer, key in self._viewers.items():
            if key == temp_key:
                self._viewers[viewer] = real_key

    # -- message cache ---------------------------------------------------------------------

    def cache_snapshot(self, key: str, snapshot: dict[str, Any]) -> None:
        """Store what a snapshot says of the session: its runtime id and message count."""
        runtime = snapshot.get("session_id")
        fields: dict[str, Any] = {}
        if isinstance(runtime, str) and runtime:
            fields["runtime_id"] = runtime
        messages = snapshot.get("messages")
        count = snapshot.get("message_count")
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            fields["message_count"] = count  # a paged snapshot holds only the last messages
        elif isinstance(messages, list):
            fields["message_count"] = len(messages)
        if fields and not is_temp_key(key):
            self._store.upsert_session(self._id, key, **fields)

    # -- what reads the whole cache: every reply that ended is in it first ------------------

    def search(self, query: str, limit: int) -> list[SearchHit]:
        """Cached messages and titles matching `query`, best first (see `Store.search`)."""
        self.cache_ended_turns()
        return self._store.search(self._id, query, limit=limit)

    def prompts(self) -> list[tuple[str, str]]:
        """(chat key, text) of the cached prompts over every chat, newest first."""
        self.cache_ended_turns()
        return self._store.prompts(self._id)

    def export(self, key: str, path: Path) -> None:
        """Write chat `key` as cached to `path` (see `export_conversation`)."""
        self.cache_ended_turn(key)
        export_conversation(self._store, self._id, key, path)

    def cache_ended_turn(self, key: str) -> None:
        """Cache now `key`'s turn that ended, if it waits for TURN_CACHE_DELAY (what reads
        the cache gets every reply that ended: `search`, `prompts`, `export`)."""
        ended = self._after_turn.get(key)
        if ended is not None:
            # Dated when it ended: a chat made meanwhile (Ctrl+N) stays above it in the list.
            self.cache_conversation(key, ended[1], at=ended[2])
            self.emit()  # its preview: the reply's last words

    def cache_ended_turns(self) -> None:
        """`cache_ended_turn` for every chat (closing, searching)."""
        for key in list(self._after_turn):
            self.cache_ended_turn(key)

    def cache_conversation(self, key: str, conv: Conversation, *, at: float | None = None) -> None:
        """Store the settled messages, shown offline or before the gateway answers; the chat
        is dated `at` (wall time; now by default)."""
        if (ended := self._after_turn.pop(key, None)) is not None:
            ended[0].cancel()  # (written now)
        if is_temp_key(key):
            return
        # A long session holds only a window of its history (from `history_start`): rows are
        # stored at their place in the whole history, so the older cached rows stay as they are.
        # Far up, only its live end is (the window there is a copy of rows cached before).
        start, messages = conv.cached_part()
        # Each at its history row (a reply of several rows takes the first): the id it is
        # shown with, so a search hit is landed on by id.
        places = conv.places(start, messages)
        kept = [
            (places[i], m)
            for i, m in enumerate(messages)
            if not m.streaming
            and not (m.role is Role.USER and m.delivery is not DeliveryState.CONFIRMED)
        ]
        rows = [
            CachedMessage(
                idx=idx,
                role=m.role.value,
                text=m.text,
                thinking=m.thinking,
                created_at=m.created_at,
                status=m.status,
                extra=_extra_of(m),
            )
            for idx, m in kept
        ]
        self._record_sent(key, [(idx, m) for idx, m in kept if m.role is Role.USER])
        before = self._cached.get(key)
        first = 0
        if before is not None:
            # Only what changed since the last write (a turn adds a prompt and a reply): a
            # long conversation is not rewritten, with its search index, at every turn end.
            while first < min(len(rows), len(before)) and rows[first] == before[first]:
                first += 1
            if first == len(rows) == len(before):
                return
        changed = rows[first:]
        old = before[first:] if before is not None else []
        from_idx = min([r.idx for r in changed[:1] + old[:1]], default=start) if first else start
        try:
            self._store.replace_messages(self._id, key, changed, from_idx=from_idx)
            self._cached[key] = rows
            if rows:
                # The last message with words (a reply's last row may be a tool call's).
                last = preview(next((r.text for r in reversed(rows) if r.text.strip()), ""))
                self._own(key)
                now = self._clock.wall() if at is None else at
                # Read before its time changes: a row not read yet would move above the rest.
                state = self._find(key)
                self._store.upsert_session(
                    self._id, key, message_count=start + len(rows), preview=last, updated_at=now
                )
                if state is not None:
                    state.summary = replace(state.summary, preview=last, updated_at=now)
        except StorageError as exc:
            log.warning("could not cache messages: %s", exc)

    def keep_streaming(self, conv: Conversation, *, now: bool = False) -> None:
        """Write the reply still growing (at most once a STREAM_SAVE_INTERVAL), marked
        streaming: should the app go away mid-reply, the next start shows every word it had
        and says the app went away (the turn's end replaces the row)."""
        msg = conv.streaming_message
        key = conv.key
        if msg is None or not msg.text or is_temp_key(key):
            return
        at = self._clock.monotonic()
        if (
            not now
            and at - self._streamed_at.get(key, -STREAM_SAVE_INTERVAL) < STREAM_SAVE_INTERVAL
        ):
            return
        start, messages = conv.cached_part()
        if not messages or messages[-1] is not msg:
            return
        self._streamed_at[key] = at
        row = CachedMessage(
            idx=conv.places(start, messages)[-1],
            role=msg.role.value,
            text=msg.text,
            thinking=msg.thinking,
            created_at=msg.created_at,
            status=STREAMING,
            extra=_extra_of(msg),
        )
        try:
            self._store.put_message(self._id, key, row)
        except StorageError as exc:
            log.warning("could not keep the growing reply: %s", exc)

    def cached_messages(
        self,
        key: str,
        *,
        first: int = 0,
        end: int | None = None,
        limit: int | None = None,
        newest: bool = False,
    ) -> list[ChatMessage]:
        """The cached history (what was loaded when it was last stored), shown offline and until
        the gateway's snapshot arrives: the bubbles at history rows `first` up to `end`, at
        most `limit` of them (the newest with `newest`; see `Store.message_rows`)."""
        rows = self._store.message_rows(
            self._id, key, first=first, end=end, limit=limit, newest=newest
        )
        out = [_from_cache(key, row) for row in rows]
        self.attach_sent(key, out)
        return out

    # -- attachments of sent prompts -------------------------------------------------------

    def attach_sent(self, key: str, messages: list[ChatMessage]) -> list[ChatMessage]:
        """Give user rows the attachments recorded for them here; return those changed.

        The local record wins: a gateway's row (a snapshot, a history page) names no file, or
        not the copy kept here. A row is matched by its place in the history and its text; a
        record whose row moved (a reply counted as fewer rows before the gateway listed it)
        is found among the few rows before and moves along.
        """
        if is_temp_key(key):
            return []
        self.attach_versions(key, messages)
        sent = self._sent_of(key)
        if not sent:
            return []
        users = [(row_of(key, m.id), m) for m in messages if m.role is Role.USER]
        claimed = {place for place, m in users if place in sent and _fits(sent[place], m)}
        changed: list[ChatMessage] = []
        for place, m in users:
            if place is None:
                continue
            record = sent.get(place)
            if record is None or not _fits(record, m):
                record = self._rehome(key, sent, place, m, claimed)
            if record is None:
                continue
            # The prompt as the user sent it: not the gateway's note of where it put the file.
            text = record.prompt if record.prompt.strip() else m.text
            if m.attachments != record.attachments or m.text != text:
                m.attachments = record.attachments
                m.text = text
                changed.append(m)
        return changed

    def attach_versions(self, key: str, messages: list[ChatMessage]) -> None:
        """Give replies the earlier versions kept for their prompts (see chats/versions)."""
        self.versions.attach(key, messages, lambda m: row_of(key, m.id))

    def _sent_of(self, key: str) -> dict[int, SentAttachments]:
        sent = self._sent.get(key)
        if sent is None:
            try:
                sent = self._store.message_attachments(self._id, key)
            except StorageError as exc:
                log.warning("could not read the messages' attachments: %s", exc)
                return {}
            self._sent[key] = sent
        return sent

    def _record_sent(self, key: str, users: list[tuple[int, ChatMessage]]) -> None:
        """Store what each settled prompt with attachments carried, once per change."""
        sent = self._sent_of(key)
        for idx, m in users:
            if not m.attachments:
                continue
            record = SentAttachments(idx, m.text, m.attachments)
            known = sent.get(idx)
            if known is not None and _same_prompt(known, record) and _same_files(known, record):
                continue
            try:
                self._store.put_message_attachments(self._id, key, idx, m.text, m.attachments)
            except StorageError as exc:
                log.warning("could not record the message's attachments: %s", exc)
                continue
            sent[idx] = record

    def _rehome(
        self,
        key: str,
        sent: dict[int, SentAttachments],
        place: int,
        msg: ChatMessage,
        claimed: set[int],
    ) -> SentAttachments | None:
        for idx in range(place - 1, place - _REHOME_WINDOW - 1, -1):
            record = sent.get(idx)
            if record is None or idx in claimed or not _fits(record, msg):
                continue
            try:
                self._store.move_message_attachments(self._id, key, idx, place)
            except StorageError as exc:
                log.warning("could not move the message's attachments: %s", exc)
                return record
            del sent[idx]
            sent[place] = moved = replace(record, idx=place)
            claimed.add(place)
            return moved
        return None


# How many rows before its recorded place a prompt's row may have moved to.
_REHOME_WINDOW = 16


def row_of(key: str, message_id: str) -> int | None:
    """The history row a bubble id `key:row` names, None for any other id."""
    tail = message_id[len(key) + 1 :] if message_id.startswith(f"{key}:") else ""
    return int(tail) if tail.isdigit() else None


def _fits(record: SentAttachments, msg: ChatMessage) -> bool:
    # Some gateways add to the prompt in their row (0.20.1: a line "@image:<its own copy>"):
    # the prompt is then a part of it.
    wanted, text = prompt_key(record.prompt), prompt_key(msg.text)
    return wanted == text or (bool(wanted) and wanted in text)


def _same_prompt(a: SentAttachments, b: SentAttachments) -> bool:
    return prompt_key(a.prompt) == prompt_key(b.prompt)


def _same_files(a: SentAttachments, b: SentAttachments) -> bool:
    return [x.sha256 for x in a.attachments] == [x.sha256 for x in b.attachments]


def _from_cache(key: str, row: MessageRow) -> ChatMessage:
    """A bubble from a cached row."""
    idx, role_name, text, thinking, created_at, status, extra = row
    role = _ROLES.get(role_name, Role.SYSTEM)
    msg = ChatMessage(f"{key}:{idx}", role, text, thinking, created_at, status=status)
    if role is Role.USER:
        msg.delivery = DeliveryState.CONFIRMED
    if extra:  # most rows have nothing more (a chat's whole cache is read as it opens)
        tools = extra.get("tools")
        if isinstance(tools, list):
            msg.tools = [_tool_from(t) for t in tools if isinstance(t, dict)]
        usage = extra.get("usage")
        if isinstance(usage, dict):
            msg.usage = usage
        cause = extra.get("cause")
        if isinstance(cause, str):
            msg.cause = cause
        duration = extra.get("duration")
        if isinstance(duration, int | float) and not isinstance(duration, bool) and duration >= 0:
            msg.duration = float(duration)
    if status == STREAMING:
        # Kept while it grew and never ended here: the app went away mid-reply.
        msg.status, msg.cause = INTERRUPTED, APP_WENT_AWAY
    return msg


def _extra_of(msg: ChatMessage) -> dict[str, Any]:
    """What a bubble needs beyond its text to look the same after a restart."""
    extra: dict[str, Any] = {}
    if msg.tools:
        extra["tools"] = [
            {"id": t.id, "name": t.name, "args": t.args, "output": t.output, "error": t.error}
            # The files it changed and their diffs: no history row keeps the diffs.
            | ({"changes": t.extra["changes"]} if t.extra.get("changes") else {})
            for t in msg.tools
        ]
    if msg.usage:
        extra["usage"] = msg.usage
    if msg.cause:
        extra["cause"] = msg.cause  # why it did not complete, in words: kept over a restart
    if msg.duration is not None:
        extra["duration"] = msg.duration  # the turn's length: no history row says it
    return extra


def _tool_from(data: dict[str, Any]) -> ToolCall:
    return ToolCall(
        id=str(data.get("id") or ""),
        name=str(data.get("name") or "tool"),
        args=str(data.get("args") or ""),
        output=str(data.get("output") or ""),
        done=True,
        error=bool(data.get("error")),
        extra={"changes": data["changes"]} if isinstance(data.get("changes"), list) else {},
    )
