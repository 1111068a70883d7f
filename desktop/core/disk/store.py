"""The crash-safe local store: SQLite (WAL) holding sessions, messages, drafts and the outbox."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from desktop.common.checkpoint import Checkpointer, after_commit
from desktop.core.disk.migrations import CJK_RANGES, LATEST, migrate
from desktop.core.errors import StorageError, StorageFullError, StorageReadOnlyError
from desktop.core.models import Attachment, DeliveryState, ReplyVersion, SessionSummary

BUSY_TIMEOUT_MS = 2000
# Attachment copies live next to the database, named by content hash (see AttachmentStore).
ATTACHMENTS_DIR = "attachments"


def blob_path(root: str | Path, sha256: str) -> Path:
    """Where the copy with content hash `sha256` is kept under the attachments folder `root`."""
    return Path(root) / sha256[:2] / sha256


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A persisted session: the stored key is durable, the runtime id is only a hint."""

    profile_id: str
    key: str
    runtime_id: str | None = None
    title: str = ""
    preview: str = ""
    updated_at: float = 0.0
    message_count: int = 0
    last_seq: int = 0
    replay_epoch: str = ""
    pinned: bool = False  # the user's own marks (migration 5), never sent to a gateway
    archived: bool = False
    user_title: str = ""  # a rename by the user (migration 7): wins over the gateway's titles

    def summary(self) -> SessionSummary:
        return SessionSummary(
            key=self.key,
            title=self.title,
            preview=self.preview,
            updated_at=self.updated_at,
            message_count=self.message_count,
            runtime_id=self.runtime_id,
            pinned=bool(self.pinned),
            archived=bool(self.archived),
        )


@dataclass(frozen=True, slots=True)
class ListPlace:
    """Where a row stands in the session list's order: the next page starts after it."""

    pinned: bool
    updated_at: float
    row: int  # the row's id: the order among equal times


@dataclass(frozen=True, slots=True)
class SessionPage:
    """Rows of the session list in its order."""

    summaries: list[SessionSummary]
    user_titles: dict[str, str]  # key -> the user's own title, for the rows that have one
    last: ListPlace | None  # where it ended (None: no rows)


@dataclass(frozen=True, slots=True)
class CachedMessage:
    """One cached message, so a session opens before the gateway answers."""

    idx: int
    role: str
    text: str = ""
    thinking: str = ""
    created_at: float = 0.0
    status: str = "complete"
    extra: dict[str, Any] = field(default_factory=dict)


# Past every history row: `message_rows` with no end (SQLite's largest integer).
_NO_END = 2**63 - 1

# A cached message's fields as a plain row: idx, role, text, thinking, created_at, status, extra.
MessageRow = tuple[int, str, str, str, float, str, dict[str, Any]]

# Around each matched term in a SearchHit snippet: control characters, which message text
# cannot confuse with markers (square brackets can).
HIT_START = "\x02"
HIT_END = "\x03"


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One full-text match: its session, a snippet with HIT_START/HIT_END around the terms."""

    session_key: str
    snippet: str
    source: str  # "message" | "title"
    message_idx: int | None = None


@dataclass(frozen=True, slots=True)
class DraftRecord:
    """A composer's content; `revision` counts edits so a stale save never wins."""

    session_key: str
    text: str = ""
    cursor: int = 0
    attachments: tuple[Attachment, ...] = ()
    updated_at: float = 0.0
    revision: int = 0
    quote: str = ""  # the message replied to, as written ("" for none)
    quote_from: str = ""  # whose message it is ("Assistant", "You")

    @property
    def empty(self) -> bool:
        return not self.text.strip() and not self.attachments and not self.quote


@dataclass(frozen=True, slots=True)
class SentAttachments:
    """What a sent prompt carried: the history row it became and its text as sent (to check a
    row at that place is still that prompt), with the attachments in the order they were sent."""

    idx: int
    prompt: str
    attachments: tuple[Attachment, ...]


def prompt_key(text: str) -> str:
    """A prompt's text as rows are compared: whitespace runs do not count."""
    return " ".join(text.split())


class Wire:
    """How far an outbox entry got towards the gateway (the `wire` column)."""

    NOTHING = 0  # no byte of it was sent
    STAGED = 1  # attachments may be staged on the gateway, the prompt was not sent
    SUBMITTED = 2  # prompt.submit may have reached the gateway: the outcome can be ambiguous


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    """One prompt on its way to a gateway, persisted before any byte of it is sent."""

    submission_ref: str
    seq: int
    profile_id: str
    session_key: str
    runtime_id: str
    text: str
    attachments: tuple[Attachment, ...] = ()
    state: DeliveryState = DeliveryState.PENDING
    error: str = ""
    created_at: float = 0.0
    attempts: int = 0
    wire: int = Wire.NOTHING
    history_mark: int = 0


_OUTBOX_COLUMNS = (
    "submission_ref, seq, profile_id, session_key, runtime_id, text, attachments, state, "
    "error, created_at, attempts, wire, history_mark"
)
_SESSION_FIELDS = (
    "runtime_id",
    "title",
    "preview",
    "updated_at",
    "message_count",
    "last_seq",
    "replay_epoch",
    "pinned",
    "archived",
    "user_title",
)
# The session list's order: pinned first, then newest first (the row id among equal times).
_LIST_ORDER = "pinned DESC, updated_at DESC, id DESC"
_KEYS_PER_QUERY = 500  # keys bound in one `IN (...)`: far below SQLite's limit on variables
_OUTBOX_MUTABLE = ("runtime_id", "text", "state", "error", "attempts", "wire", "history_mark")


def encode_attachments(items: Iterable[Attachment]) -> str:
    return json.dumps(
        [
            {
                "sha256": a.sha256,
                "filename": a.filename,
                "mime": a.mime,
                "size": a.size,
                "path": a.path,
            }
            for a in items
        ]
    )


def decode_attachments(raw: str) -> tuple[Attachment, ...]:
    return tuple(
        Attachment(
            sha256=str(d["sha256"]),
            filename=str(d["filename"]),
            mime=str(d["mime"]),
            size=int(d["size"]),
            path=str(d["path"]),
        )
        for d in json.loads(raw or "[]")
    )


def translate(exc: sqlite3.Error, action: str) -> StorageError:
    """Map an sqlite3 error to the typed StorageError tree, once, at the boundary."""
    text = str(exc).lower()
    if "full" in text:
        return StorageFullError(f"could not {action}: the disk is full ({exc})")
    if "readonly" in text or "read-only" in text or "read only" in text:
        return StorageReadOnlyError(f"could not {action}: the data folder is read-only ({exc})")
    if "unable to open" in text:
        return StorageReadOnlyError(f"could not {action}: cannot open the database ({exc})")
    if "locked" in text or "busy" in text:
        return StorageError(f"could not {action}: the database is busy ({exc})")
    return StorageError(f"could not {action}: {exc}", retryable=False)


def _default_connect(path: str) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)


class Store:
    """The app's SQLite store. Each method is one short transaction; rows come back as values.

    Durable writes (drafts, outbox) commit with synchronous=FULL; the message cache, which the
    gateway can always resend, commits with synchronous=NORMAL. The log is carried into the
    database on a thread of its own, never in a commit (see desktop/common/checkpoint.py).
    `connect` builds the connection (autocommit mode); tests use it to inject faults.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        connect: Callable[[str], sqlite3.Connection] | None = None,
    ) -> None:
        self.path = str(path)
        # The folder of attachment copies, found by hash: moving the data dir moves them too.
        self.attachments_dir = Path(self.path).parent / ATTACHMENTS_DIR
        try:
            connect = connect or _default_connect
            self._conn = connect(self.path)
            self._conn.isolation_level = None
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS:d}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            # The OS caches the file; SQLite's default 2 MB page cache would be resident too.
            self._conn.execute("PRAGMA cache_size = -512")
            self._conn.execute("PRAGMA wal_autocheckpoint = 0")  # the checkpointer's job
            self._checkpoints: Checkpointer | None = Checkpointer(self.path, connect)
            self._sync = ""
            self._set_sync("FULL")
            migrate(self._conn, LATEST)
        except sqlite3.Error as exc:
            if hasattr(self, "_conn"):
                self._conn.close()
            raise translate(exc, "open the local store") from exc

    def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.close()  # first: the last connection closed carries the log in
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    # -- plumbing ---------------------------------------------------------------------------

    def _set_sync(self, level: str) -> None:
        if self._sync != level:
            self._conn.execute(f"PRAGMA synchronous = {level}")
            self._sync = level

    @contextmanager
    def _tx(self, action: str, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        conn = self._conn
        try:
            self._set_sync("FULL" if durable else "NORMAL")
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise translate(exc, action) from exc
        try:
            yield conn
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise translate(exc, action) from exc
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._committed()

    def _committed(self) -> None:
        """A commit went into the log: the checkpointer carries it in (see after_commit)."""
        self._checkpoints = after_commit(self._checkpoints, self._conn)

    def _read(self, action: str, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise translate(exc, action) from exc

    # -- sessions ---------------------------------------------------------------------------

    def upsert_session(self, profile_id: str, key: str, **fields: Any) -> SessionRecord:
        """Create the session row if needed and set the given fields (see SessionRecord)."""
        unknown = set(fields) - set(_SESSION_FIELDS)
        if unknown:
            raise TypeError(f"unknown session fields: {sorted(unknown)}")
        with self._tx("save the session", durable=False) as c:
            c.execute(
                "INSERT OR IGNORE INTO sessions (profile_id, key) VALUES (?, ?)", (profile_id, key)
            )
            if fields:
                sets = ", ".join(f"{name} = ?" for name in fields)
                c.execute(
                    f"UPDATE sessions SET {sets} WHERE profile_id = ? AND key = ?",
                    (*fields.values(), profile_id, key),
                )
        found = self.session(profile_id, key)
        assert found is not None
        return found

    def session(self, profile_id: str, key: str) -> SessionRecord | None:
        rows = self._read(
            "read the session",
            f"SELECT profile_id, key, {', '.join(_SESSION_FIELDS)} FROM sessions "
            "WHERE profile_id = ? AND key = ?",
            (profile_id, key),
        )
        return SessionRecord(*rows[0]) if rows else None

    def sessions(self, profile_id: str) -> list[SessionRecord]:
        """Every session of a profile, in the list's order (see `session_page`)."""
        rows = self._read(
            "read the session list",
            f"SELECT profile_id, key, {', '.join(_SESSION_FIELDS)} FROM sessions "
            f"WHERE profile_id = ? ORDER BY {_LIST_ORDER}",
            (profile_id,),
        )
        return [SessionRecord(*r) for r in rows]

    def session_page(
        self,
        profile_id: str,
        *,
        after: ListPlace | None = None,
        limit: int | None = None,
        through: str | None = None,
    ) -> SessionPage:
        """Rows of the session list in its order (pinned first, then newest first) from just
        after `after` (a page's `last`): `limit` of them, or down to session `through` (none
        when it comes before `after` or is not stored), or all."""
        where, params = "profile_id = ?", list[Any]([profile_id])
        if after is not None:
            where += " AND (pinned, updated_at, id) < (?, ?, ?)"
            params += [after.pinned, after.updated_at, after.row]
        if through is not None:
            where += (
                " AND (pinned, updated_at, id) >= "
                "(SELECT pinned, updated_at, id FROM sessions WHERE profile_id = ? AND key = ?)"
            )
            params += [profile_id, through]
        tail = ""
        if limit is not None:
            tail, params = " LIMIT ?", [*params, limit]
        rows = self._read(
            "read the session list",
            "SELECT key, title, preview, updated_at, message_count, runtime_id, pinned, archived, "
            f"user_title, id FROM sessions WHERE {where} ORDER BY {_LIST_ORDER}{tail}",
            params,
        )
        # Made here, not through SessionRecord: 10,000 rows are read once the window shows.
        summaries = [
            SessionSummary(
                key=r[0],
                title=r[1],
                preview=r[2],
                updated_at=r[3],
                message_count=r[4],
                runtime_id=r[5],
                pinned=bool(r[6]),
                archived=bool(r[7]),
            )
            for r in rows
        ]
        last = ListPlace(bool(rows[-1][6]), rows[-1][3], rows[-1][9]) if rows else None
        return SessionPage(summaries, {r[0]: r[8] for r in rows if r[8]}, last)

    def keys_with_messages(self, profile_id: str, keys: Sequence[str]) -> set[str]:
        """Those of `keys` (sessions of a profile) that have messages cached."""
        found: set[str] = set()
        for start in range(0, len(keys), _KEYS_PER_QUERY):
            part = keys[start : start + _KEYS_PER_QUERY]
            rows = self._read(
                "read cached sessions",
                "SELECT DISTINCT session_key FROM messages WHERE profile_id = ? "
                f"AND session_key IN ({', '.join('?' * len(part))})",
                (profile_id, *part),
            )
            found.update(str(r[0]) for r in rows)
        return found

    def delete_session(self, profile_id: str, key: str) -> None:
        with self._tx("delete the session", durable=False) as c:
            c.execute(
                "DELETE FROM messages WHERE profile_id = ? AND session_key = ?", (profile_id, key)
            )
            c.execute("DELETE FROM sessions WHERE profile_id = ? AND key = ?", (profile_id, key))
            c.execute(
                "DELETE FROM message_attachments WHERE profile_id = ? AND session_key = ?",
                (profile_id, key),
            )
            c.execute(
                "DELETE FROM reply_versions WHERE profile_id = ? AND session_key = ?",
                (profile_id, key),
            )

    # -- message cache ----------------------------------------------------------------------

    def replace_messages(
        self,
        profile_id: str,
        key: str,
        messages: Sequence[CachedMessage],
        *,
        from_idx: int = 0,
    ) -> None:
        """Replace a session's cached messages (those at `from_idx` and after) with the
        gateway's authoritative copy."""
        with self._tx("cache the messages", durable=False) as c:
            c.execute(
                "DELETE FROM messages WHERE profile_id = ? AND session_key = ? AND idx >= ?",
                (profile_id, key, from_idx),
            )
            c.executemany(
                "INSERT INTO messages (profile_id, session_key, idx, role, text, thinking, "
                "created_at, status, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        profile_id,
                        key,
                        m.idx,
                        m.role,
                        m.text,
                        m.thinking,
                        m.created_at,
                        m.status,
                        json.dumps(m.extra),
                    )
                    for m in messages
                ],
            )

    def put_message(self, profile_id: str, key: str, message: CachedMessage) -> None:
        """Insert or replace the message at `message.idx` (e.g. a reply that completed)."""
        with self._tx("cache the message", durable=False) as c:
            c.execute(
                "INSERT INTO messages (profile_id, session_key, idx, role, text, thinking, "
                "created_at, status, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(profile_id, session_key, idx) DO UPDATE SET role=excluded.role, "
                "text=excluded.text, thinking=excluded.thinking, created_at=excluded.created_at, "
                "status=excluded.status, extra=excluded.extra",
                (
                    profile_id,
                    key,
                    message.idx,
                    message.role,
                    message.text,
                    message.thinking,
                    message.created_at,
                    message.status,
                    json.dumps(message.extra),
                ),
            )

    def messages(self, profile_id: str, key: str) -> list[CachedMessage]:
        return [CachedMessage(*r) for r in self.message_rows(profile_id, key)]

    def message_rows(
        self,
        profile_id: str,
        key: str,
        *,
        first: int = 0,
        end: int | None = None,
        limit: int | None = None,
        newest: bool = False,
    ) -> list[MessageRow]:
        """A chat's cached messages as plain rows (a CachedMessage's fields, in order of
        `idx`): those at rows `first` up to `end` (exclusive; None: to the last), at most
        `limit` of them, the newest ones with `newest` (a chat opens with its last page)."""
        order = "DESC" if newest else "ASC"
        rows = self._read(
            "read cached messages",
            "SELECT idx, role, text, thinking, created_at, status, extra FROM messages "
            "WHERE profile_id = ? AND session_key = ? AND idx >= ? AND idx < ? "
            f"ORDER BY idx {order} LIMIT ?",
            (
                profile_id,
                key,
                first,
                _NO_END if end is None else end,
                -1 if limit is None else limit,
            ),
        )
        if newest:
            rows.reverse()
        # Most rows carry nothing beyond their text: "{}" is not parsed (10,000 rows: 9 ms).
        loads = json.loads
        return [
            (r[0], r[1], r[2], r[3], r[4], r[5], {} if r[6] == "{}" else loads(r[6])) for r in rows
        ]

    def prompts(self, profile_id: str, *, limit: int = 500) -> list[tuple[str, str]]:
        """(session key, text) of the user's cached prompts over every chat, newest first."""
        rows = self._read(
            "read the prompts",
            "SELECT m.session_key, m.text FROM messages m JOIN sessions s "
            "ON s.profile_id = m.profile_id AND s.key = m.session_key "
            "WHERE m.profile_id = ? AND m.role = 'user' AND m.text != '' "
            "ORDER BY s.updated_at DESC, m.idx DESC LIMIT ?",
            (profile_id, limit),
        )
        return [(str(r[0]), str(r[1])) for r in rows]

    # -- search -----------------------------------------------------------------------------

    def search(self, profile_id: str, query: str, *, limit: int = 50) -> list[SearchHit]:
        """Full-text search over session titles and cached messages of one profile.

        Titles come best match first; messages newest first (the list shows the newest chats
        first too). The newest `limit` matches are read straight off the index in rowid order,
        so a word in half of a million messages costs what a rare one does: ranking every match
        (`ORDER BY rank`) took 0.5-0.9 s there. The last word is a prefix (search as you type)
        unless the whole word alone has `limit` matches.
        """
        match = fts_query(query)
        if not match:
            return []
        if CJK.search(query):
            return self._search_cjk(profile_id, _TOKEN.findall(query), limit)
        titles = self._read(
            "search",
            "SELECT s.key, snippet(sessions_fts, 0, char(2), char(3), '…', 12) FROM sessions_fts "
            "JOIN sessions s ON s.id = sessions_fts.rowid "
            "WHERE sessions_fts MATCH ? AND s.profile_id = ? ORDER BY rank LIMIT ?",
            (match, profile_id, limit),
        )
        sql = (
            "SELECT m.session_key, snippet(messages_fts, 0, char(2), char(3), '…', 12), m.idx "
            "FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
            "WHERE messages_fts MATCH ? AND m.profile_id = ? ORDER BY messages_fts.rowid DESC "
            "LIMIT ?"
        )
        # A prefix reads every matching word's whole list before the newest comes out (~40 ms
        # for a word in half of a million messages); the word as typed is read lazily. When it
        # alone fills the limit, those are the results.
        bodies = self._read("search", sql, (fts_query(query, prefix=False), profile_id, limit))
        if len(bodies) < limit:
            bodies = self._read("search", sql, (match, profile_id, limit))
        hits = [SearchHit(r[0], r[1], "title") for r in titles]
        hits += [SearchHit(r[0], r[1], "message", r[2]) for r in bodies]
        return hits[:limit]

    def _search_cjk(self, profile_id: str, words: list[str], limit: int) -> list[SearchHit]:
        """A query holding CJK text: every word as a substring, over the CJK rows only.

        Any message that holds a CJK word is in messages_cjk (migration 8). A word of 3+
        characters is looked up by its trigrams (MATCH); a shorter one has no trigram, so it is
        a substring test over those rows, read newest first until `limit` match. Titles are few:
        a substring test over them, the recently updated first.
        """
        long = [w for w in words if len(w) >= 3]
        short = [w for w in words if len(w) < 3]
        # `|| ''`: a plain LIKE on the trigram table goes to FTS5, which finds nothing for
        # patterns under 3 characters.
        like = ["(t.text || '') LIKE ? ESCAPE '\\'" for _ in short]
        patterns = [f"%{_like_escape(w)}%" for w in short]
        where = (["messages_cjk MATCH ?"] if long else []) + like + ["m.profile_id = ?"]
        params: list[Any] = ([" ".join(f'"{w}"' for w in long)] if long else []) + patterns
        bodies = self._read(
            "search",
            # CROSS JOIN: read the CJK rows newest first and stop at `limit`; left to itself
            # the planner walks the profile's million messages and sorts (0.5-0.8 s).
            "SELECT m.session_key, t.text, m.idx FROM messages_cjk t "
            "CROSS JOIN messages m ON m.id = t.rowid "
            f"WHERE {' AND '.join(where)} ORDER BY t.rowid DESC LIMIT ?",
            (*params, profile_id, limit),
        )
        title_where = " AND ".join("s.title LIKE ? ESCAPE '\\'" for _ in words)
        titles = self._read(
            "search",
            f"SELECT s.key, s.title FROM sessions s WHERE {title_where} AND s.profile_id = ? "
            "ORDER BY s.updated_at DESC LIMIT ?",
            (*(f"%{_like_escape(w)}%" for w in words), profile_id, limit),
        )
        hits = [SearchHit(r[0], cjk_snippet(r[1], words), "title") for r in titles]
        hits += [SearchHit(r[0], cjk_snippet(r[1], words), "message", r[2]) for r in bodies]
        return hits[:limit]

    # -- drafts -----------------------------------------------------------------------------

    def save_draft(self, draft: DraftRecord) -> None:
        with self._tx("save the draft") as c:
            _write_draft(c, draft)

    def draft(self, session_key: str) -> DraftRecord | None:
        rows = self._read(
            "read the draft",
            f"SELECT {_DRAFT_COLUMNS} FROM drafts WHERE session_key = ?",
            (session_key,),
        )
        return _draft_row(rows[0]) if rows else None

    def drafts(self) -> list[DraftRecord]:
        rows = self._read(
            "read drafts",
            f"SELECT {_DRAFT_COLUMNS} FROM drafts",
        )
        return [_draft_row(r) for r in rows]

    def adopt_draft(self, temp_key: str, real_key: str) -> DraftRecord | None:
        """Move the draft typed under `temp_key` (e.g. "new:<uuid>") to the created session.

        A non-empty draft already under `real_key` is kept first, the adopted text appended.
        """
        with self._tx("move the draft") as c:
            rows = c.execute(
                f"SELECT {_DRAFT_COLUMNS} FROM drafts WHERE session_key IN (?, ?)",
                (temp_key, real_key),
            ).fetchall()
            found = {r[0]: _draft_row(r) for r in rows}
            temp = found.get(temp_key)
            if temp is None:
                return found.get(real_key)
            merged = merge_drafts(found.get(real_key), temp, real_key)
            c.execute("DELETE FROM drafts WHERE session_key = ?", (temp_key,))
            _write_draft(c, merged)
            return merged

    # -- outbox -----------------------------------------------------------------------------

    def outbox_add(self, entry: OutboxEntry) -> OutboxEntry:
        """Persist a new entry (seq assigned here, after every existing one); return it."""
        with self._tx("queue the message") as c:
            seq = int(c.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM outbox").fetchone()[0])
            c.execute(
                f"INSERT INTO outbox ({_OUTBOX_COLUMNS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    entry.submission_ref,
                    seq,
                    entry.profile_id,
                    entry.session_key,
                    entry.runtime_id,
                    entry.text,
                    encode_attachments(entry.attachments),
                    entry.state.value,
                    entry.error,
                    entry.created_at,
                    entry.attempts,
                    entry.wire,
                    entry.history_mark,
                ),
            )
        got = self.outbox_get(entry.submission_ref)
        assert got is not None
        return got

    def outbox_update(self, ref: str, **fields: Any) -> OutboxEntry | None:
        unknown = set(fields) - set(_OUTBOX_MUTABLE)
        if unknown:
            raise TypeError(f"unknown outbox fields: {sorted(unknown)}")
        values = [v.value if isinstance(v, DeliveryState) else v for v in fields.values()]
        with self._tx("update the queued message") as c:
            sets = ", ".join(f"{name} = ?" for name in fields)
            c.execute(f"UPDATE outbox SET {sets} WHERE submission_ref = ?", (*values, ref))
        return self.outbox_get(ref)

    def outbox_get(self, ref: str) -> OutboxEntry | None:
        rows = self._read(
            "read the queued message",
            f"SELECT {_OUTBOX_COLUMNS} FROM outbox WHERE submission_ref = ?",
            (ref,),
        )
        return _outbox_row(rows[0]) if rows else None

    def outbox_entries(
        self, profile_id: str | None = None, session_key: str | None = None
    ) -> list[OutboxEntry]:
        """Entries in send order, optionally of one profile and/or session."""
        where, params = [], []
        if profile_id is not None:
            where.append("profile_id = ?")
            params.append(profile_id)
        if session_key is not None:
            where.append("session_key = ?")
            params.append(session_key)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._read(
            "read the outbox", f"SELECT {_OUTBOX_COLUMNS} FROM outbox{clause} ORDER BY seq", params
        )
        return [_outbox_row(r) for r in rows]

    def rekey_session(self, profile_id: str, old_key: str, new_key: str) -> None:
        """A session typed into before it existed got its real key: move its queued prompts."""
        with self._tx("move the queued messages") as c:
            c.execute(
                "UPDATE outbox SET session_key = ? WHERE profile_id = ? AND session_key = ?",
                (new_key, profile_id, old_key),
            )

    def outbox_swap(self, ref_a: str, ref_b: str) -> None:
        """Exchange the send order of two entries (one transaction; `seq` stays unique)."""
        with self._tx("reorder the queued messages") as c:
            seqs = {
                str(r[0]): int(r[1])
                for r in c.execute(
                    "SELECT submission_ref, seq FROM outbox WHERE submission_ref IN (?, ?)",
                    (ref_a, ref_b),
                ).fetchall()
            }
            if len(seqs) != 2:
                return
            move = "UPDATE outbox SET seq = ? WHERE submission_ref = ?"
            c.execute(move, (-seqs[ref_a], ref_a))
            c.execute(move, (seqs[ref_a], ref_b))
            c.execute(move, (seqs[ref_b], ref_a))

    def outbox_delete(self, ref: str) -> None:
        with self._tx("remove the queued message") as c:
            c.execute("DELETE FROM outbox WHERE submission_ref = ?", (ref,))

    # -- attachments ------------------------------------------------------------------------

    def record_attachment(self, att: Attachment) -> None:
        with self._tx("record the attachment") as c:
            c.execute(
                "INSERT OR IGNORE INTO attachments (sha256, filename, mime, size, path, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (att.sha256, att.filename, att.mime, att.size, att.path, time.time()),
            )

    def attachment_rows(self) -> list[Attachment]:
        rows = self._read(
            "read attachments", "SELECT sha256, filename, mime, size, path FROM attachments"
        )
        return [Attachment(*r) for r in rows]

    def forget_attachments(self, hashes: Iterable[str]) -> None:
        with self._tx("forget attachments") as c:
            c.executemany("DELETE FROM attachments WHERE sha256 = ?", [(h,) for h in hashes])

    def referenced_attachments(self) -> set[str]:
        """Hashes any draft, outbox entry or sent message still points at (never
        garbage-collect those)."""
        rows = self._read("read attachment references", "SELECT attachments FROM drafts")
        rows += self._read("read attachment references", "SELECT attachments FROM outbox")
        sent = self._read(
            "read attachment references", "SELECT DISTINCT sha256 FROM message_attachments"
        )
        return {a.sha256 for (raw,) in rows for a in decode_attachments(raw)} | {
            str(r[0]) for r in sent
        }

    # -- attachments of sent messages -------------------------------------------------------

    def put_message_attachments(
        self, profile_id: str, key: str, idx: int, prompt: str, items: Sequence[Attachment]
    ) -> None:
        """Record that the prompt at history row `idx` carried `items` (replacing any record
        of that row). Durable: the gateway may not keep them, this is their only record."""
        with self._tx("record the message's attachments") as c:
            c.execute(
                "DELETE FROM message_attachments WHERE profile_id = ? AND session_key = ? "
                "AND idx = ?",
                (profile_id, key, idx),
            )
            now = time.time()
            c.executemany(
                "INSERT INTO message_attachments (profile_id, session_key, idx, position, "
                "prompt, sha256, filename, mime, size, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        profile_id,
                        key,
                        idx,
                        n,
                        prompt,
                        a.sha256,
                        a.filename,
                        a.mime,
                        a.size,
                        now,
                    )
                    for n, a in enumerate(items)
                ],
            )

    def move_message_attachments(self, profile_id: str, key: str, old: int, new: int) -> None:
        """The prompt recorded at row `old` is listed at row `new` now."""
        with self._tx("move the message's attachments") as c:
            c.execute(
                "DELETE FROM message_attachments WHERE profile_id = ? AND session_key = ? "
                "AND idx = ?",
                (profile_id, key, new),
            )
            c.execute(
                "UPDATE message_attachments SET idx = ? WHERE profile_id = ? AND session_key = ? "
                "AND idx = ?",
                (new, profile_id, key, old),
            )

    # -- earlier replies (versions) ----------------------------------------------------------

    def add_reply_version(self, profile_id: str, key: str, idx: int, version: ReplyVersion) -> None:
        """Keep `version` as the newest earlier reply to the prompt at history row `idx`.
        Durable: the gateway keeps only the latest reply, this is the others' only record."""
        with self._tx("keep the earlier reply") as c:
            row = c.execute(
                "SELECT COALESCE(MAX(n), -1) FROM reply_versions WHERE profile_id = ? "
                "AND session_key = ? AND idx = ?",
                (profile_id, key, idx),
            ).fetchone()
            c.execute(
                "INSERT INTO reply_versions (profile_id, session_key, idx, n, prompt, text, "
                "status, cause, model, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    profile_id,
                    key,
                    idx,
                    int(row[0]) + 1,
                    version.prompt,
                    version.text,
                    version.status,
                    version.cause,
                    version.model,
                    time.time(),
                ),
            )

    def reply_versions(self, profile_id: str, key: str) -> dict[int, tuple[ReplyVersion, ...]]:
        """The earlier replies of a session's prompts by the prompt's history row, oldest first."""
        rows = self._read(
            "read the earlier replies",
            "SELECT idx, prompt, text, status, cause, model FROM reply_versions "
            "WHERE profile_id = ? AND session_key = ? ORDER BY idx, n",
            (profile_id, key),
        )
        out: dict[int, tuple[ReplyVersion, ...]] = {}
        for idx, prompt, text, status, cause, model in rows:
            version = ReplyVersion(text, status, cause, model, prompt)
            out[int(idx)] = (*out.get(int(idx), ()), version)
        return out

    def message_attachments(self, profile_id: str, key: str) -> dict[int, SentAttachments]:
        """Each recorded prompt of a session by its history row; paths resolved by hash."""
        rows = self._read(
            "read the messages' attachments",
            "SELECT idx, prompt, sha256, filename, mime, size FROM message_attachments "
            "WHERE profile_id = ? AND session_key = ? ORDER BY idx, position",
            (profile_id, key),
        )
        out: dict[int, SentAttachments] = {}
        for idx, prompt, sha, filename, mime, size in rows:
            att = Attachment(
                sha256=sha,
                filename=filename,
                mime=mime,
                size=int(size),
                path=str(blob_path(self.attachments_dir, sha)),
            )
            known = out.get(idx)
            atts = (known.attachments if known else ()) + (att,)
            out[idx] = SentAttachments(int(idx), prompt, atts)
        return out


def merge_drafts(current: DraftRecord | None, incoming: DraftRecord, key: str) -> DraftRecord:
    """`current` (if non-empty) first, then a blank line, then `incoming`; attachments united."""
    if current is None or current.empty:
        return DraftRecord(
            key,
            incoming.text,
            incoming.cursor,
            incoming.attachments,
            incoming.updated_at,
            max(incoming.revision, current.revision if current else 0) + 1,
            incoming.quote,
            incoming.quote_from,
        )
    text = (
        current.text.rstrip() + DRAFT_SEPARATOR + incoming.text if incoming.text else current.text
    )
    # The quote of the draft kept first, else the incoming one's.
    quote = (
        (current.quote, current.quote_from)
        if current.quote
        else (incoming.quote, incoming.quote_from)
    )
    seen = {a.sha256 for a in current.attachments}
    atts = current.attachments + tuple(a for a in incoming.attachments if a.sha256 not in seen)
    return DraftRecord(
        key,
        text,
        current.cursor,
        atts,
        max(current.updated_at, incoming.updated_at),
        max(current.revision, incoming.revision) + 1,
        *quote,
    )


DRAFT_SEPARATOR = "\n\n"

_TOKEN = re.compile(r"\w+", re.UNICODE)


def fts_query(query: str, *, prefix: bool = True) -> str:
    """Make user input a safe FTS5 query: every word must match, the last one as a prefix
    (or, `prefix` False, as the whole word)."""
    words = _TOKEN.findall(query)
    if not words:
        return ""
    quoted = [f'"{w}"' for w in words]
    if prefix:
        quoted[-1] += "*"
    return " ".join(quoted)


_DRAFT_COLUMNS = "session_key, text, cursor, attachments, updated_at, revision, quote, quote_from"


CJK = re.compile(f"[{CJK_RANGES}]")
# Characters of context before and after the first match in a CJK snippet: few before, as a
# CJK character is as wide as two Latin ones and the list row shows one line of it.
SNIPPET_BEFORE = 8
SNIPPET_AFTER = 32


def _like_escape(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def cjk_snippet(text: str, words: Sequence[str]) -> str:
    """A snippet around the first match with HIT_START/HIT_END around every word in it, as
    FTS5's snippet() does for the other queries (which cannot mark a substring)."""
    marks = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)), re.I)
    first = marks.search(text)
    if first is None:
        return text[:SNIPPET_AFTER]
    start = max(0, first.start() - SNIPPET_BEFORE)
    end = min(len(text), first.end() + SNIPPET_AFTER)
    # Never cut a match in two at the end.
    for m in marks.finditer(text, start):
        if m.start() < end < m.end():
            end = m.end()
    window = marks.sub(lambda m: f"{HIT_START}{m.group(0)}{HIT_END}", text[start:end])
    return ("…" if start else "") + window + ("…" if end < len(text) else "")


def _write_draft(c: sqlite3.Connection, d: DraftRecord) -> None:
    c.execute(
        "INSERT INTO drafts (session_key, text, cursor, attachments, updated_at, revision, "
        "quote, quote_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(session_key) DO UPDATE "
        "SET text=excluded.text, cursor=excluded.cursor, attachments=excluded.attachments, "
        "updated_at=excluded.updated_at, revision=excluded.revision, quote=excluded.quote, "
        "quote_from=excluded.quote_from",
        (
            d.session_key,
            d.text,
            d.cursor,
            encode_attachments(d.attachments),
            d.updated_at,
            d.revision,
            d.quote,
            d.quote_from,
        ),
    )


def _draft_row(r: Sequence[Any]) -> DraftRecord:
    return DraftRecord(
        r[0], r[1], int(r[2]), decode_attachments(r[3]), float(r[4]), int(r[5]), r[6], r[7]
    )


def _outbox_row(r: Sequence[Any]) -> OutboxEntry:
    return OutboxEntry(
        submission_ref=r[0],
        seq=int(r[1]),
        profile_id=r[2],
        session_key=r[3],
        runtime_id=r[4],
        text=r[5],
        attachments=decode_attachments(r[6]),
        state=DeliveryState(r[7]),
        error=r[8],
        created_at=float(r[9]),
        attempts=int(r[10]),
        wire=int(r[11]),
        history_mark=int(r[12]),
    )
