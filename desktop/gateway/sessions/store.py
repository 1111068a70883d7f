"""The gateway's SQLite store: sessions, messages and submission refs (WAL, synchronous=FULL)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from desktop.common.checkpoint import Checkpointer, after_commit

SCHEMA_VERSION = 1
# Submission refs must be remembered at least 24 h; keep a week so slow clients stay safe.
SUBMISSION_TTL = 7 * 24 * 3600.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT '',
    started_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    running_epoch TEXT
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    text TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'complete',
    created_at REAL NOT NULL,
    usage TEXT,
    attachments TEXT
);
CREATE INDEX IF NOT EXISTS messages_by_session ON messages(session_id, id);
CREATE TABLE IF NOT EXISTS submissions (
    ref TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    result TEXT NOT NULL,
    state TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
-- The model a session's replies use when the user switched it (config.set model); no row:
-- the primary provider's model. An added table: gateways without it ignore it.
CREATE TABLE IF NOT EXISTS session_models (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    provider_id TEXT NOT NULL,
    model TEXT NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    title: str
    source: str
    started_at: float
    updated_at: float
    running_epoch: str | None
    message_count: int = 0
    preview: str = ""


@dataclass(frozen=True, slots=True)
class MessageRow:
    id: int
    role: str
    text: str
    status: str
    created_at: float
    usage: dict[str, Any] | None
    attachments: list[dict[str, Any]] | None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "role": self.role,
            "text": self.text,
            "status": self.status,
            "created_at": self.created_at,
        }
        if self.usage:
            out["usage"] = self.usage
        if self.attachments:
            out["attachments"] = self.attachments
        return out


@dataclass(frozen=True, slots=True)
class SubmissionRow:
    ref: str
    session_id: str
    digest: str
    result: dict[str, Any]
    state: str


class Store:
    """One SQLite connection, used from the event loop's thread only (every call is short)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = _connect(str(path))
        self._db.execute("PRAGMA journal_mode=WAL")
        # The log is carried in on a thread of its own, not in a commit the loop waits for
        # (the deltas of a streaming reply with it): see desktop/common/checkpoint.py.
        self._db.execute("PRAGMA wal_autocheckpoint=0")
        self._checkpoints: Checkpointer | None = Checkpointer(str(path), _connect)
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.execute("PRAGMA busy_timeout=2000")
        # Pages come from the OS's file cache anyway; SQLite's own 2 MB copy is resident memory
        # the user pays for beside the app. 512 KB holds every index page a history page needs.
        self._db.execute("PRAGMA cache_size=-512")
        self._db.executescript(_SCHEMA)
        self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.close()  # first: the last connection closed carries the log in
        self._db.close()

    def _committed(self) -> None:
        self._checkpoints = after_commit(self._checkpoints, self._db)

    def _fetch(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        """Rows of a query; text that is not valid UTF-8 (written by other means) is read with
        U+FFFD in place of the bad bytes instead of failing every read of its session."""
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.OperationalError as exc:
            if "decode" not in str(exc):
                raise
        self._db.text_factory = _lenient_text
        try:
            return self._db.execute(sql, args).fetchall()
        finally:
            self._db.text_factory = str

    def _tx(self) -> _Transaction:
        return _Transaction(self._db, self._committed)

    # sessions

    def create_session(self, sid: str, title: str, source: str, now: float) -> None:
        with self._tx():
            self._db.execute(
                "INSERT INTO sessions(id, title, source, started_at, updated_at)"
                " VALUES (?,?,?,?,?)",
                (sid, title, source, now, now),
            )

    def session_model(self, sid: str) -> tuple[str, str] | None:
        """(provider id, model) the user chose for this session, if any."""
        rows = self._fetch(
            "SELECT provider_id, model FROM session_models WHERE session_id = ?", (sid,)
        )
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    def set_session_model(self, sid: str, choice: tuple[str, str] | None) -> None:
        with self._tx():
            if choice is None:
                self._db.execute("DELETE FROM session_models WHERE session_id = ?", (sid,))
            else:
                self._db.execute(
                    "INSERT OR REPLACE INTO session_models(session_id, provider_id, model)"
                    " VALUES (?,?,?)",
                    (sid, *choice),
                )

    def get_session(self, sid: str) -> SessionRow | None:
        rows = self._fetch(
            "SELECT id, title, source, started_at, updated_at, running_epoch,"
            " (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)"
            " FROM sessions s WHERE id = ?",
            (sid,),
        )
        return SessionRow(*rows[0]) if rows else None

    def list_sessions(self, limit: int) -> list[SessionRow]:
        rows = self._fetch(
            "SELECT id, title, source, started_at, updated_at, running_epoch,"
            " (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id),"
            " COALESCE((SELECT text FROM messages m WHERE m.session_id = s.id AND m.role = 'user'"
            "  ORDER BY m.id DESC LIMIT 1), '')"
            " FROM sessions s ORDER BY updated_at DESC LIMIT ?",
            (limit,),
        )
        return [
            SessionRow(r[0], r[1], r[2], r[3], r[4], r[5], message_count=r[6], preview=r[7][:120])
            for r in rows
        ]

    def undo_last_turn(self, sid: str) -> int:
        """Delete the last user row and every row after it; how many rows went."""
        row = self._db.execute(
            "SELECT MAX(id) FROM messages WHERE session_id = ? AND role = 'user'", (sid,)
        ).fetchone()
        if row is None or row[0] is None:
            return 0
        with self._tx():
            cur = self._db.execute(
                "DELETE FROM messages WHERE session_id = ? AND id >= ?", (sid, row[0])
            )
        return cur.rowcount

    def truncate_before_user(self, sid: str, ordinal: int) -> int | None:
        """Delete the session's `ordinal`-th user row (from 0) and every row after it; how many
        rows went, None when it holds no such row (nothing deleted)."""
        rows = self._db.execute(
            "SELECT id FROM messages WHERE session_id = ? AND role = 'user' ORDER BY id",
            (sid,),
        ).fetchall()
        if not 0 <= ordinal < len(rows):
            return None
        with self._tx():
            cur = self._db.execute(
                "DELETE FROM messages WHERE session_id = ? AND id >= ?", (sid, rows[ordinal][0])
            )
        return cur.rowcount

    def set_title(self, sid: str, title: str) -> None:
        with self._tx():
            self._db.execute("UPDATE sessions SET title = ? WHERE id = ?", (title, sid))

    def delete_session(self, sid: str) -> None:
        with self._tx():
            self._db.execute("DELETE FROM sessions WHERE id = ?", (sid,))

    def repair(self, sid: str, live_epoch: str, worker_alive: bool) -> bool:
        """Mark a session idle whose turn worker is gone (crash, kill -9); True when repaired.

        Prompts that were queued behind the dead turn become user rows so no prompt is lost.
        """
        row = self._db.execute("SELECT running_epoch FROM sessions WHERE id = ?", (sid,)).fetchone()
        if row is None or row[0] is None or (row[0] == live_epoch and worker_alive):
            return False
        with self._tx():
            self._db.execute(
                "UPDATE messages SET status = 'interrupted'"
                " WHERE session_id = ? AND status = 'streaming'",
                (sid,),
            )
            for ref, text, created in self._db.execute(
                "SELECT ref, text, created_at FROM submissions"
                " WHERE session_id = ? AND state = 'queued'"
                " ORDER BY created_at",
                (sid,),
            ).fetchall():
                self._insert_message(
                    sid, role="user", text=text, status="complete", now=created, attachments=None
                )
                self._db.execute("UPDATE submissions SET state = 'orphaned' WHERE ref = ?", (ref,))
            self._db.execute("UPDATE sessions SET running_epoch = NULL WHERE id = ?", (sid,))
        return True

    # messages

    def messages(self, sid: str) -> list[MessageRow]:
        rows = self._fetch(
            "SELECT id, role, text, status, created_at, usage, attachments FROM messages"
            " WHERE session_id = ? ORDER BY id",
            (sid,),
        )
        return _message_rows(rows)

    def message_slice(
        self, sid: str, offset: int, limit: int | None = None
    ) -> tuple[list[MessageRow], int]:
        """Rows `offset`... (at most `limit`) and the session's row count; only those are read."""
        total = int(
            self._db.execute(
                "SELECT COUNT(*) FROM messages WHERE session_id = ?", (sid,)
            ).fetchone()[0]
        )
        rows = self._fetch(
            "SELECT id, role, text, status, created_at, usage, attachments FROM messages"
            " WHERE session_id = ? ORDER BY id LIMIT ? OFFSET ?",
            (sid, -1 if limit is None else limit, offset),
        )
        return _message_rows(rows), total

    def import_messages(self, sid: str, rows: Iterable[tuple[str, str, float]]) -> int:
        """Append finished (role, text, created_at) rows in one transaction (imports, benches)."""
        with self._tx():
            cur = self._db.executemany(
                "INSERT INTO messages(session_id, role, text, status, created_at)"
                " VALUES (?,?,?,'complete',?)",
                ((sid, role, text, at) for role, text, at in rows),
            )
            last = self._db.execute(
                "SELECT MAX(created_at) FROM messages WHERE session_id = ?", (sid,)
            ).fetchone()[0]
            if last is not None:
                self._db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (last, sid))
        return cur.rowcount

    def _insert_message(
        self,
        sid: str,
        *,
        role: str,
        text: str,
        status: str,
        now: float,
        attachments: list[dict[str, Any]] | None,
    ) -> int:
        cur = self._db.execute(
            "INSERT INTO messages(session_id, role, text, status, created_at, attachments)"
            " VALUES (?,?,?,?,?,?)",
            (sid, role, text, status, now, json.dumps(attachments) if attachments else None),
        )
        self._db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, sid))
        return int(cur.lastrowid or 0)

    # submissions and turns

    def find_submission(self, ref: str) -> SubmissionRow | None:
        row = self._db.execute(
            "SELECT ref, session_id, digest, result, state FROM submissions WHERE ref = ?", (ref,)
        ).fetchone()
        if row is None:
            return None
        return SubmissionRow(row[0], row[1], row[2], json.loads(row[3]), row[4])

    def record_submit(
        self,
        sid: str,
        *,
        ref: str | None,
        digest: str,
        result: dict[str, Any],
        text: str,
        now: float,
        start_epoch: str | None = None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> None:
        """Remember a submit (and count it as served) durably, before anything runs.

        With `start_epoch` the turn starts in the same transaction (see `start_turn`): a full
        disk then fails the submit as a whole, never leaving a ref that claims a prompt ran.
        """
        with self._tx():
            if ref is not None:
                self._db.execute(
                    "INSERT INTO submissions"
                    "(ref, session_id, digest, result, state, text, created_at)"
                    " VALUES (?,?,?,?,?,?,?)",
                    (ref, sid, digest, json.dumps(result), "queued", text, now),
                )
            self._bump("served_submits")
            if start_epoch is not None:
                self.start_turn(
                    sid, ref=ref, text=text, attachments=attachments, epoch=start_epoch, now=now
                )

    def start_turn(
        self,
        sid: str,
        *,
        ref: str | None,
        text: str,
        attachments: list[dict[str, Any]] | None,
        epoch: str,
        now: float,
    ) -> int:
        """Persist the user's prompt and mark the session running under this process's epoch."""
        with self._tx():
            msg_id = self._insert_message(
                sid, role="user", text=text, status="complete", now=now, attachments=attachments
            )
            if ref is not None:
                self._db.execute("UPDATE submissions SET state = 'started' WHERE ref = ?", (ref,))
            self._db.execute("UPDATE sessions SET running_epoch = ? WHERE id = ?", (epoch, sid))
            return msg_id

    def begin_reply(self, sid: str, now: float) -> int:
        with self._tx():
            return self._insert_message(
                sid, role="assistant", text="", status="streaming", now=now, attachments=None
            )

    def save_partial(self, msg_id: int, text: str) -> None:
        with self._tx():
            self._db.execute("UPDATE messages SET text = ? WHERE id = ?", (text, msg_id))

    def finish_turn(
        self, sid: str, msg_id: int, text: str, status: str, usage: dict[str, Any] | None
    ) -> None:
        with self._tx():
            self._db.execute(
                "UPDATE messages SET text = ?, status = ?, usage = ? WHERE id = ?",
                (text, status, json.dumps(usage) if usage else None, msg_id),
            )
            self._db.execute("UPDATE sessions SET running_epoch = NULL WHERE id = ?", (sid,))

    def prune_submissions(self, now: float) -> int:
        with self._tx():
            cur = self._db.execute(
                "DELETE FROM submissions WHERE created_at < ?", (now - SUBMISSION_TTL,)
            )
        return cur.rowcount

    # counters

    def _bump(self, name: str) -> None:
        self._db.execute(
            "INSERT INTO counters(name, value) VALUES (?, 1)"
            " ON CONFLICT(name) DO UPDATE SET value = value + 1",
            (name,),
        )

    def counter(self, name: str) -> int:
        row = self._db.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
        return int(row[0]) if row else 0

    def served_submits(self) -> int:
        """How many submits were accepted to run (duplicates answered from refs not counted)."""
        return self.counter("served_submits")


def _lenient_text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on error (autocommit connection underneath).

    Used inside another one it joins it: the outer transaction commits or rolls back the whole.
    """

    def __init__(self, db: sqlite3.Connection, committed: Callable[[], None]) -> None:
        self._db = db
        self._committed = committed
        self._outer = False

    def __enter__(self) -> None:
        self._outer = not self._db.in_transaction
        if self._outer:
            self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if not self._outer:
            return
        if not exc_type:
            self._db.execute("COMMIT")
            self._committed()
        elif self._db.in_transaction:
            # SQLite has already rolled back after some errors (SQLITE_FULL): a second
            # ROLLBACK would fail and hide the error that names the cause.
            self._db.execute("ROLLBACK")


def _connect(path: str) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def _message_rows(rows: list[Any]) -> list[MessageRow]:
    return [
        MessageRow(
            r[0], r[1], r[2], r[3], r[4],
            json.loads(r[5]) if r[5] else None,
            json.loads(r[6]) if r[6] else None,
        )
        for r in rows
    ]  # fmt: skip
