"""Search at scale: all-chats search over 1,000,000 cached messages in the real app's sidebar.

`python -m desktop` on a data dir seeded by bench/bigseed.py (10,000 chats, 1,000,000
messages in the gateway's store and cached in the app's). Online and settled, the driver types
each query into the search box at once and repaints the chat list: the time from the text to
the filtered list painted (the search runs in the box's textChanged). Queries: common words
(in half the messages), a rare word (10 messages), prefixes as typed, and Chinese words.
The same-run baseline is the same app over 10,000 messages (100 chats).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from bench.inapp import finish, online, until

BENCH = "search_scale"
CHATS = int(os.environ.get("HERMES_QT_BENCH_SEARCH_CHATS", "10000"))
MESSAGES = int(os.environ.get("HERMES_QT_BENCH_SEARCH_N", "1000000"))
BASE = (100, 10_000)
RUNS = 20
INSIDE = "索引"  # a word in the middle of the seeded Chinese sentence
TARGET_MS = 100.0
QUERIES = {
    "common words": ["part", "work", "question", "answer", "point"],
    "a rare word": ["quokka", "Quokka"],
    "prefixes": ["qu", "ans", "wor", "poi", "cov"],
    "Chinese words": ["数据库", "关于第"],
}


async def drive(app: Any) -> None:
    from bench.common import percentile

    await online(app)
    window = app.window
    model = window.sidebar.session_list.model()
    chats = int(os.environ["HERMES_QT_BENCH_SEARCH_CHATS"])
    await until(lambda: model.rowCount() >= chats, 120, "every chat listed")
    await asyncio.sleep(2.0)  # the gateway's list pages merged
    box = window.sidebar.search_box
    view = window.sidebar.session_list.viewport()
    out: dict[str, Any] = {}
    for kind, words in QUERIES.items():
        times: list[float] = []
        found: list[int] = []
        for n in range(RUNS):
            box.setText("")
            view.repaint()
            await asyncio.sleep(0.02)  # the loop runs between queries, as between keystrokes
            t0 = time.perf_counter()
            box.setText(words[n % len(words)])  # searched in textChanged, the list filtered
            view.repaint()
            times.append(time.perf_counter() - t0)
            found.append(model.rowCount())
        out[kind] = {"p95": percentile(times, 95), "worst": max(times), "found": min(found)}
    box.setText(INSIDE)
    out["inside"] = model.rowCount()
    box.setText("")
    finish(app, out)


def run(chats: int, messages: int) -> tuple[dict[str, Any], int]:
    from bench.apprun import run_app
    from bench.bigseed import copy_into, seeded, store_bytes

    source = seeded(chats, messages)

    def fill(root: Path) -> None:
        copy_into(source, root)

    got = run_app(
        "bench.search_scale",
        timeout=300,
        seed=fill,
        env={"HERMES_QT_BENCH_SEARCH_CHATS": str(chats)},
    )
    return got, store_bytes(source)


def main() -> int:
    from bench.common import Result, emit

    base, _ = run(*BASE)
    got, size = run(CHATS, MESSAGES)
    rows = []
    for kind, words in QUERIES.items():
        p95 = got[kind]["p95"] * 1000
        rows.append(
            Result(
                BENCH,
                f"{MESSAGES:,} messages: {kind} to results on screen, p95",
                f"<= {TARGET_MS:g} ms",
                p95,
                "ms",
                base[kind]["p95"] * 1000,
                f"{BASE[1]:,} messages, same app",
                p95 <= TARGET_MS and got[kind]["found"] > 0,
                f"{', '.join(repr(w) for w in words)}; {RUNS} runs, worst "
                f"{got[kind]['worst'] * 1000:.1f} ms; at least {got[kind]['found']:,} chats listed",
            )
        )
    rows.append(
        Result(
            BENCH,
            f"a Chinese word inside a sentence ({INSIDE!r}): chats found",
            "> 0 (every message holding it)",
            got["inside"],
            "chats",
            got["Chinese words"]["found"],
            "chats found for the words at the sentence's start",
            got["inside"] > 0,
            "found in messages_cjk, the trigram index of the messages holding CJK text "
            "(unicode61 alone keeps a run of CJK characters as one token)",
        )
    )
    rows.append(
        Result(
            BENCH,
            f"{MESSAGES:,} messages, {CHATS:,} chats: the app's store on disk",
            "reported",
            size / 1e6,
            "MB",
            None,
            "",
            None,
            "SQLite with its FTS5 index of messages and titles (unicode61 tokenizer) and "
            "the trigram index of the messages holding CJK text",
        )
    )
    emit(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
