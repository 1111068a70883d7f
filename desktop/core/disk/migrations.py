"""The local store's schema as an ordered list of migrations, tracked by PRAGMA user_version."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

# A message holding any CJK character (kana, hangul and ideographs, their punctuation and
# half-width forms): GLOB compares code points, so these ranges test text in SQL. unicode61
# keeps a run of such characters as one token; these rows are indexed again by trigrams.
CJK_RANGES = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003ffff"
CJK_GLOB = f"*[{CJK_RANGES}]*"
# Fill messages_cjk from the cache (migration 8, and bench/bigseed.py after a bulk insert).


def holds_cjk(column: str) -> str:
    """SQL true when `column` holds CJK text. Pure ASCII text (as long in bytes as in
    characters) is ruled out first: the GLOB alone took 6.5 s over 1,000,000 messages, the
    test with it 0.2 s."""
    return f"length(CAST({column} AS BLOB)) != length({column}) AND {column} GLOB '{CJK_GLOB}'"


CJK_BACKFILL = (
    f"INSERT INTO messages_cjk(rowid, text) SELECT id, text FROM messages WHERE {holds_cjk('text')}"
)

# Migration N (1-based) takes a database at user_version N-1 to user_version N. Never edit a
# shipped migration: append a new one, with a test that migrates a populated database to it.
MIGRATIONS: tuple[str, ...] = (
    # 1: profiles, the session list, the message cache and drafts.
    """
    CREATE TABLE profiles (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL DEFAULT '',
        url TEXT NOT NULL DEFAULT '',
        extra TEXT NOT NULL DEFAULT '{}',
        created_at REAL NOT NULL DEFAULT 0
    );
    CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        profile_id TEXT NOT NULL,
        key TEXT NOT NULL,
        runtime_id TEXT,
        title TEXT NOT NULL DEFAULT '',
        preview TEXT NOT NULL DEFAULT '',
        updated_at REAL NOT NULL DEFAULT 0,
        message_count INTEGER NOT NULL DEFAULT 0,
        last_seq INTEGER NOT NULL DEFAULT 0,
        replay_epoch TEXT NOT NULL DEFAULT '',
        UNIQUE (profile_id, key)
    );
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        profile_id TEXT NOT NULL,
        session_key TEXT NOT NULL,
        idx INTEGER NOT NULL,
        role TEXT NOT NULL,
        text TEXT NOT NULL DEFAULT '',
        thinking TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'complete',
        extra TEXT NOT NULL DEFAULT '{}',
        UNIQUE (profile_id, session_key, idx)
    );
    CREATE TABLE drafts (
        session_key TEXT PRIMARY KEY,
        text TEXT NOT NULL DEFAULT '',
        cursor INTEGER NOT NULL DEFAULT 0,
        attachments TEXT NOT NULL DEFAULT '[]',
        updated_at REAL NOT NULL DEFAULT 0,
        revision INTEGER NOT NULL DEFAULT 0
    );
    """,
    # 2: the outbox (delivery jobs) and the attachment blobs they and drafts point at.
    """
    CREATE TABLE outbox (
        submission_ref TEXT PRIMARY KEY,
        seq INTEGER NOT NULL UNIQUE,
        profile_id TEXT NOT NULL,
        session_key TEXT NOT NULL,
        runtime_id TEXT NOT NULL DEFAULT '',
        text TEXT NOT NULL,
        attachments TEXT NOT NULL DEFAULT '[]',
        state TEXT NOT NULL DEFAULT 'pending',
        error TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL DEFAULT 0,
        attempts INTEGER NOT NULL DEFAULT 0,
        wire INTEGER NOT NULL DEFAULT 0,
        history_mark INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX outbox_by_session ON outbox (profile_id, session_key, seq);
    CREATE TABLE attachments (
        sha256 TEXT PRIMARY KEY,
        filename TEXT NOT NULL,
        mime TEXT NOT NULL,
        size INTEGER NOT NULL,
        path TEXT NOT NULL,
        created_at REAL NOT NULL DEFAULT 0
    );
    """,
    # 3: full-text search over cached messages and session titles, kept in sync by triggers.
    """
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        text, content='messages', content_rowid='id', tokenize='unicode61'
    );
    CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, text) VALUES (new.id, new.text);
    END;
    CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END;
    CREATE TRIGGER messages_fts_au AFTER UPDATE OF text ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
        INSERT INTO messages_fts(rowid, text) VALUES (new.id, new.text);
    END;
    CREATE VIRTUAL TABLE sessions_fts USING fts5(
        title, content='sessions', content_rowid='id', tokenize='unicode61'
    );
    CREATE TRIGGER sessions_fts_ai AFTER INSERT ON sessions BEGIN
        INSERT INTO sessions_fts(rowid, title) VALUES (new.id, new.title);
    END;
    CREATE TRIGGER sessions_fts_ad AFTER DELETE ON sessions BEGIN
        INSERT INTO sessions_fts(sessions_fts, rowid, title) VALUES ('delete', old.id, old.title);
    END;
    CREATE TRIGGER sessions_fts_au AFTER UPDATE OF title ON sessions BEGIN
        INSERT INTO sessions_fts(sessions_fts, rowid, title) VALUES ('delete', old.id, old.title);
        INSERT INTO sessions_fts(rowid, title) VALUES (new.id, new.title);
    END;
    INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
    INSERT INTO sessions_fts(sessions_fts) VALUES ('rebuild');
    """,
    # 4: what each sent prompt carried, by content hash (never a path: the data dir may move).
    # Kept apart from `messages`, which a snapshot rewrites: the row a prompt became (`idx`, its
    # place in the whole history) and its text, so a gateway's copy of it gets them back.
    """
    CREATE TABLE message_attachments (
        profile_id TEXT NOT NULL,
        session_key TEXT NOT NULL,
        idx INTEGER NOT NULL,
        position INTEGER NOT NULL,
        prompt TEXT NOT NULL DEFAULT '',
        sha256 TEXT NOT NULL,
        filename TEXT NOT NULL,
        mime TEXT NOT NULL,
        size INTEGER NOT NULL,
        created_at REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (profile_id, session_key, idx, position)
    );
    CREATE INDEX message_attachments_by_hash ON message_attachments (sha256);
    """,
    # 5: earlier replies to a prompt (Regenerate, edit-and-resend), kept to switch back to.
    # Like message_attachments, kept apart from `messages` (a gateway's history holds only the
    # newest reply): by the prompt's row `idx` and text; `n` orders them, oldest first.
    """
    CREATE TABLE reply_versions (
        profile_id TEXT NOT NULL,
        session_key TEXT NOT NULL,
        idx INTEGER NOT NULL,
        n INTEGER NOT NULL,
        prompt TEXT NOT NULL DEFAULT '',
        text TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL DEFAULT 'complete',
        cause TEXT NOT NULL DEFAULT '',
        model TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (profile_id, session_key, idx, n)
    );
    """,
    # 6: how the user organised the list, kept only here (the gateways know no pins or archive).
    """
    ALTER TABLE sessions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;
    """,
    # 7: the title the user gave a chat ('' for none): a gateway's own title never replaces it.
    """
    ALTER TABLE sessions ADD COLUMN user_title TEXT NOT NULL DEFAULT '';
    """,
    # 8: the message a draft replies to (quote in reply), kept with the draft's text.
    """
    ALTER TABLE drafts ADD COLUMN quote TEXT NOT NULL DEFAULT '';
    ALTER TABLE drafts ADD COLUMN quote_from TEXT NOT NULL DEFAULT '';
    """,
    # 9: a word inside a CJK sentence: the messages holding CJK text, indexed by trigrams (with
    # their own copy of the text, so a 1-2 character scan reads only these rows). Other text
    # is not indexed twice; the backfill scans the cache once and indexes only CJK rows.
    f"""
    CREATE VIRTUAL TABLE messages_cjk USING fts5(text, tokenize='trigram');
    CREATE TRIGGER messages_cjk_ai AFTER INSERT ON messages
    WHEN {holds_cjk("new.text")} BEGIN
        INSERT INTO messages_cjk(rowid, text) VALUES (new.id, new.text);
    END;
    CREATE TRIGGER messages_cjk_ad AFTER DELETE ON messages
    WHEN {holds_cjk("old.text")} BEGIN
        DELETE FROM messages_cjk WHERE rowid = old.id;
    END;
    CREATE TRIGGER messages_cjk_au AFTER UPDATE OF text ON messages BEGIN
        DELETE FROM messages_cjk WHERE rowid = old.id;
        INSERT INTO messages_cjk(rowid, text) SELECT new.id, new.text
        WHERE {holds_cjk("new.text")};
    END;
    {CJK_BACKFILL};
    """,
)

LATEST = len(MIGRATIONS)


def user_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def migrate(
    conn: sqlite3.Connection, target: int = LATEST, migrations: Sequence[str] = MIGRATIONS
) -> int:
    """Apply the missing migrations up to `target`, each in its own transaction; return it.

    `conn` must be in autocommit mode (isolation_level=None) so each step commits atomically
    together with its user_version bump.
    """
    current = user_version(conn)
    if current > len(migrations):
        raise ValueError(f"database schema {current} is newer than this app ({len(migrations)})")
    for version in range(current + 1, target + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(migrations[version - 1]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version:d}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return max(current, target)


def _statements(script: str) -> list[str]:
    """Split a migration into statements; trigger bodies contain ';' so use complete_statement."""
    out: list[str] = []
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out
