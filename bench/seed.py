"""Seed an app data dir through the embedded gateway's own store, as if the chats had happened."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from bench.sample import ANSWER
from desktop.gateway.sessions.store import Store

# `--data-dir ROOT` keeps the app's data in ROOT/data and its gateway's in ROOT/data/gateway.
GATEWAY_DB = Path("data") / "gateway" / "gateway.sqlite3"
T0 = 1_767_000_000.0


def rows(n: int) -> Iterator[tuple[str, str, float]]:
    """`n` messages: questions and markdown answers (a list, inline code, a code block)."""
    for i in range(n):
        if i % 2 == 0:
            yield "user", f"Question {i}: how does part {i} work?", T0 + i
        else:
            yield "assistant", ANSWER.format(i=i), T0 + i


def seed(root: Path, sessions: dict[str, int]) -> None:
    """Create `sessions` (stored id -> message count) in the gateway store under `root`."""
    store = Store(root / GATEWAY_DB)
    try:
        for k, (sid, n) in enumerate(sessions.items()):
            store.create_session(sid, f"Bench session {k}: {n:,} messages", "desktop", T0 + k)
            store.import_messages(sid, rows(n))
    finally:
        store.close()
