"""Big data dirs for the scale rows: N chats and M messages in the gateway's store and the app's.

Seeded with bulk SQL into the real schemas (each store's own code creates them), one
transaction per store, and kept for the run in a temp folder named by the sizes: the rows
that need the same size copy it instead of seeding again. The app's store holds what a user
who had read every chat would have cached: the same chats, titles, previews and messages as
the gateway, so the list merge after connecting changes nothing and the cache is current.

Message text: questions and markdown answers (bench/sample.py); every 20th message is a
Chinese sentence, and one message in 100,000 holds the rare word "quokka".
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench.common import SEED_CACHE_ENV as CACHE_ENV
from bench.sample import ANSWER
from bench.seed import GATEWAY_DB, T0

APP_DB = Path("data") / "hermes-qt.sqlite3"
WINDOW_INI = Path("config") / "window.ini"
PROFILE = "embedded"  # the embedded gateway's profile id (desktop/app/assembly.py)
RARE = "quokka"
RARE_EVERY = 100_000
CJK_EVERY = 20
CJK = "关于第{i}部分\uff1a数据库的索引是怎样工作的\uff1f我们讨论了搜索和缓存。"  # full-width : ?


def key_of(k: int) -> str:
    return f"chat-{k:05d}"


def text_of(i: int, g: int = 0) -> tuple[str, str]:
    """(role, text) of message `i` of a chat (its own numbering), `g` over the whole store."""
    if g % RARE_EVERY == RARE_EVERY - 1:
        return "user", f"Have you ever seen a {RARE} at part {i}?"
    if i % CJK_EVERY == CJK_EVERY - 1:
        return "user", CJK.format(i=i)
    if i % 2 == 0:
        return "user", f"Question {i}: how does part {i} work?"
    return "assistant", ANSWER.format(i=i)


def counts(chats: int, messages: int) -> Iterator[tuple[int, int, int]]:
    """(chat number, its message count, the store-wide number of its first message):
    `messages` spread evenly, chat 0 the newest."""
    base, extra = divmod(messages, chats)
    first = 0
    for k in range(chats):
        n = base + (1 if k < extra else 0)
        yield k, n, first
        first += n


def updated(k: int, chats: int) -> float:
    return T0 + (chats - k) * 60.0


def seed_gateway(path: Path, chats: int, messages: int) -> None:
    from desktop.gateway.sessions.store import Store as GatewayStore

    GatewayStore(path).close()  # its schema, as the gateway makes it
    db = sqlite3.connect(str(path), isolation_level=None)
    try:
        db.execute("PRAGMA synchronous=OFF")
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO sessions (id, title, source, started_at, updated_at) VALUES (?,?,?,?,?)",
            (
                (key_of(k), f"Bench chat {k}", "desktop", updated(k, chats), updated(k, chats))
                for k in range(chats)
            ),
        )
        db.executemany(
            "INSERT INTO messages (session_id, role, text, status, created_at) "
            "VALUES (?,?,?,'complete',?)",
            (
                (key_of(k), *text_of(i, g + i), updated(k, chats) - n + i)
                for k, n, g in counts(chats, messages)
                for i in range(n)
            ),
        )
        db.execute("COMMIT")
    finally:
        db.close()


def last_prompt(n: int, g: int) -> str:
    for i in range(n - 1, -1, -1):
        role, text = text_of(i, g + i)
        if role == "user":
            return text
    return ""


def seed_app(path: Path, chats: int, messages: int) -> None:
    """The app's store: session rows and the message cache, the full-text index built once."""
    from desktop.core.chats.index import preview
    from desktop.core.disk.migrations import CJK_BACKFILL
    from desktop.core.disk.store import Store as AppStore

    AppStore(path).close()  # its schema and migrations, as the app makes them
    db = sqlite3.connect(str(path), isolation_level=None)
    try:
        db.execute("PRAGMA synchronous=OFF")
        triggers = db.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages'"
        ).fetchall()
        db.execute("BEGIN")
        # Indexed once at the end (FTS5 'rebuild'), not row by row through the triggers.
        for name, _sql in triggers:
            db.execute(f"DROP TRIGGER {name}")
        db.executemany(
            "INSERT INTO sessions (profile_id, key, title, preview, updated_at, message_count) "
            "VALUES (?,?,?,?,?,?)",
            (
                (
                    PROFILE,
                    key_of(k),
                    f"Bench chat {k}",
                    preview(last_prompt(n, g)),
                    updated(k, chats),
                    n,
                )
                for k, n, g in counts(chats, messages)
            ),
        )
        db.executemany(
            "INSERT INTO messages (profile_id, session_key, idx, role, text, created_at) "
            "VALUES (?,?,?,?,?,?)",
            (
                (PROFILE, key_of(k), i, *text_of(i, g + i), updated(k, chats) - n + i)
                for k, n, g in counts(chats, messages)
                for i in range(n)
            ),
        )
        db.execute("INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')")
        db.execute(CJK_BACKFILL)  # the trigram index of the CJK rows (migration 8)
        for _name, sql in triggers:
            db.execute(sql)
        db.execute("COMMIT")
    finally:
        db.close()


def write_last_open(root: Path, key: str) -> None:
    """The chat the previous run left open (what the window reopens at start)."""
    ini = root / WINDOW_INI
    ini.parent.mkdir(parents=True, exist_ok=True)
    ini.write_text(f"[ui]\nlast_session\\{PROFILE}={key}\n", encoding="utf-8")


def _cache_root() -> Path:
    folder = os.environ.get(CACHE_ENV)
    if not folder:
        folder = tempfile.mkdtemp(prefix="hermes-bench-seed-")
        os.environ[CACHE_ENV] = folder  # later rows of this process reuse it
    return Path(folder)


def seeded(chats: int, messages: int, *, app_cache: bool = True) -> Path:
    """A data dir with `chats` chats and `messages` messages (cached for the run); its path.
    Copy it (`copy_into`) before running the app on it: the app writes to its stores."""
    name = f"{chats}x{messages}" + ("" if app_cache else "-gateway-only")
    done = _cache_root() / name / ".done"
    if done.exists():
        return done.parent
    root = done.parent
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    started = time.perf_counter()
    seed_gateway(root / GATEWAY_DB, chats, messages)
    if app_cache:
        seed_app(root / APP_DB, chats, messages)
    done.write_text(f"{time.perf_counter() - started:.1f}\n")
    return root


def seed_seconds(root: Path) -> float:
    return float((root / ".done").read_text())


def copy_into(source: Path, root: Path) -> None:
    """The seeded stores into the app's fresh data dir `root`."""
    for rel in (GATEWAY_DB, APP_DB):
        src = source / rel
        if src.exists():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, root / rel)


def store_bytes(root: Path) -> int:
    """The app's store on disk (database, WAL and shared memory files)."""
    base = root / APP_DB
    return sum(p.stat().st_size for p in base.parent.glob(base.name + "*") if p.is_file())
