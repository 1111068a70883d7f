"""Exactly-once delivery and follow-ups on every real Hermes line (0.19.0, 0.20.1.2, 0.22.2,
0.21.5).

One gateway per line; in one session, through the fault proxy:

- 20a: prompt.submit reaches the gateway, its reply is lost (blackhole down), the link is cut
  after the turn completed: the prompt is confirmed, never restored, runs once. 0.20.1 and 0.22
  answer the reconnect's activate with `messages: []` + `messages_omitted`; the outbox must ask
  `session.history` instead of taking that for "not there".
- 20a-running: the same cut while the provider holds the turn (a gate): confirmed from
  `inflight.user`; the reply then completes on the new socket with its own text.
- 20b: the submit never reaches the gateway (blackhole up, bytes lost on the reset): restored.
- F1: a follow-up sent while a reply runs is held ("Queued: ...") until that reply ends, then
  runs as its own turn: two bubbles, each with its own full reply, and the gateway's history
  holds both prompts once each, each followed by its own reply (0.20.1/0.22 would otherwise
  fold it into the running turn; 0.19 would interrupt it).

- E1: after each of the three reconnects the earlier turns (each prompt and its reply, in
  order) are still on screen (`Conversation.messages`, with the app's own prompt bubbles) and
  in the local cache (`Store.messages`, written by the app's parts: at each snapshot the router
  takes, at each turn end, and when a kept bubble's prompt is confirmed). 0.20.1 and 0.22
  answer the reconnect's activate with an omitted snapshot, which is no empty history; 0.22
  and 0.21.5 catch up by replay and send no history at all, so a prompt's user row there is
  its confirmed bubble (a cut prompt is confirmed after its turn ended, after both caches).
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from desktop.common.clock import AsyncioClock
from desktop.core.chats.index import SessionIndex
from desktop.core.delivery.outbox import HELD
from desktop.core.models import Role, SessionSummary
from desktop.core.profile.feed import ConversationFeed
from desktop.core.profile.prompt_bubbles import PromptBubbles
from tests.reliability.conftest import RecordFigure
from tests.reliability.history import Outcome
from tests.reliability.rig import Rig, rig, until
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.fault_proxy import proxy_to
from tests.support.hermes_env import (
    HERMES_019,
    HERMES_0201,
    HERMES_0215,
    HERMES_022,
    HermesDist,
    hermes_gateway,
    line_params,
    require_hermes,
)

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(420)]

LINES = line_params(HERMES_019, HERMES_0201, HERMES_022, HERMES_0215)


@contextlib.asynccontextmanager
async def line_rig(tmp: Path, dist: HermesDist) -> AsyncIterator[tuple[Rig, FakeOpenAIServer]]:
    with FakeOpenAIServer("warm-up answer", chunk_size=8) as fake:
        async with hermes_gateway(tmp / "home", fake.base_url, dist) as gw:
            with proxy_to(gw.url) as (proxy, url):
                async with rig(tmp, gateway=False, url=url, token=gw.token) as r:
                    r.proxy = proxy
                    await r.wait_online(60)
                    yield r, fake
                    r.proxy = None


async def gateway_rows(r: Rig, key: str) -> list[tuple[str, str]]:
    """(role, text) of the gateway's own history, tool rows left out."""
    history = await r.sup.call("session.history", {"session_id": r.router.runtime_id(key)})
    rows = history.get("messages", []) if isinstance(history, dict) else []
    return [
        (str(m.get("role")), str(m.get("text") or m.get("content") or ""))
        for m in rows
        if m.get("role") in ("user", "assistant")
    ]


def users(rows: list[tuple[str, str]]) -> Counter[str]:
    return Counter(text for role, text in rows if role == "user")


def submits(r: Rig, text: str) -> int:
    return sum('"prompt.submit"' in s and text in s for s in r.sent)


async def provider_hits(fake: FakeOpenAIServer, n: int) -> None:
    await until(lambda: len(fake.requests) >= n, f"{n} provider requests", 90)


Turns = list[tuple[str, str]]


def show_like_the_app(r: Rig, key: str) -> None:
    """The app's parts between the outbox and the screen, as ProfileController wires them:
    prompt bubbles (a prompt's user row from the moment it is queued), the session index
    writing the chat to the local cache at each turn end (through the feed) and at every
    snapshot the router takes (as OnlineCatchUp does)."""
    pid, clock = r.opt.profile_id, AsyncioClock()
    index = SessionIndex(pid, r.store, clock, lambda _call: None)
    index.add(SessionSummary(key=key, title="reliability"))
    feed = ConversationFeed(r.router, index, clock, lambda _call: None)
    bubbles = PromptBubbles(
        chats=feed, listing=index, cancel=r.outbox.cancel, resolve=str, tell=lambda *_: None
    )
    r.outbox.on_state(bubbles.on_outbox_state, pid)
    r.outbox.on_removed(bubbles.on_outbox_removed, pid)
    conv = feed.ensure(key)

    def snapshot(k: str, snap: dict[str, Any]) -> None:
        if k == key:
            index.cache_snapshot(k, snap)
            index.cache_conversation(k, conv)

    r.router.on_snapshot(snapshot)


def shown(r: Rig, key: str) -> Turns:
    conv = r.router.conversation(key)
    assert conv is not None
    return [(m.role.value, m.text) for m in conv.messages if not m.streaming]


def cached(r: Rig, key: str) -> Turns:
    return [(m.role, m.text) for m in r.store.messages(r.opt.profile_id, key)]


def kept(rows: Turns, earlier: Turns) -> int:
    """How many of the earlier (role, text) rows are there, in order (a subsequence)."""
    found, it = 0, iter(rows)
    for want in earlier:
        if any(row == want for row in it):
            found += 1
        else:
            break
    return found


def doubled(rows: Turns, earlier: Turns) -> int:
    """How many of the earlier prompts show more than once (a kept bubble beside the
    gateway's copy of it)."""
    prompts = users(rows)
    return sum(prompts[text] > 1 for role, text in earlier if role == "user")


async def earlier_kept(r: Rig, key: str, earlier: Turns) -> tuple[str, bool]:
    """After a reconnect: the earlier turns on screen and in the cache, each prompt once
    (waits for a history the router fetches after an omitted snapshot); the figure's words
    and whether all are."""

    def whole() -> bool:
        on_screen, in_cache = shown(r, key), cached(r, key)
        return (
            kept(on_screen, earlier) == kept(in_cache, earlier) == len(earlier)
            and doubled(on_screen, earlier) == doubled(in_cache, earlier) == 0
        )

    with contextlib.suppress(AssertionError):  # the figure says what is missing
        await until(whole, "earlier turns on screen and cached", 20)
    words = (
        f"earlier rows on screen {kept(shown(r, key), earlier)}/{len(earlier)}, "
        f"cached {kept(cached(r, key), earlier)}/{len(earlier)}, prompts shown twice "
        f"{doubled(shown(r, key), earlier)}, cached twice {doubled(cached(r, key), earlier)}"
    )
    if not whole():
        words += f" (on screen {_brief(shown(r, key))}, cached {_brief(cached(r, key))})"
    return words, whole()


def _brief(rows: Turns) -> list[tuple[str, str]]:
    return [(role, text[:24]) for role, text in rows[-6:]]


@pytest.mark.parametrize("dist", LINES)
async def test_hermes_delivery_exactly_once_and_follow_ups(
    tmp_path: Path, dist: HermesDist, record_figure: RecordFigure
) -> None:
    require_hermes(dist)
    tag = dist.line  # the gateway of rows S@L in tests/reliability/report.py
    async with line_rig(tmp_path, dist) as (r, fake):
        key = await r.create_session()
        # A first turn: the agent is built (12-14 s) and the session has an earlier turn.
        show_like_the_app(r, key)
        r.submit(key, "warm up please")
        await r.wait_reply(key, "warm-up answer", 90)
        earlier: Turns = [("user", "warm up please"), ("assistant", "warm-up answer")]
        after: list[tuple[str, str, bool]] = []  # (cut, what was kept, all of it)

        # 20a: it ran and completed while the reply was held; then the link is cut.
        fake.script = [{"content": "cut answer one"}]
        seen = len(fake.requests)
        r.proxy.set_mode("blackhole", direction="down")
        cut = r.submit(key, "cut prompt that ran")
        await until(lambda: r.history.ops[cut.submission_ref].ambiguous, "ambiguous", 30)
        await provider_hits(fake, seen + 1)
        await until(lambda: fake.streams_done >= 2, "the cut turn answered", 60)
        epoch = r.sup.epoch
        r.restore_network()
        await r.wait_online(60, after=epoch)
        await until(
            lambda: r.history.ops[cut.submission_ref].outcome is not None, "cut settled", 60
        )
        rows = await gateway_rows(r, key)
        op = r.history.ops[cut.submission_ref]
        earlier += [("user", cut.text), ("assistant", "cut answer one")]
        after.append(("20a", *await earlier_kept(r, key, earlier)))
        record_figure(
            f"20a@{tag}",
            "cut after the gateway got prompt.submit, turn completed: confirmed, never "
            "restored, one user row and one reply in the gateway's history",
            f"outcome {op.outcome.value if op.outcome else None}, sent "
            f"{submits(r, cut.text)}, user rows {users(rows)[cut.text]}, restored "
            f"{r.restored.count(cut.text)}, composer {r.composer_text(key)!r}",
            op.outcome is Outcome.CONFIRMED
            and submits(r, cut.text) == 1
            and users(rows)[cut.text] == 1
            and rows.count(("assistant", "cut answer one")) == 1
            and cut.text not in r.restored
            and r.composer_text(key) == "",
        )

        # 20a-running: the same cut while the provider holds the turn.
        gate = threading.Event()
        fake.script = [{"content": "held answer two", "gate": gate}]
        seen = len(fake.requests)
        r.proxy.set_mode("blackhole", direction="down")
        held = r.submit(key, "cut prompt still running")
        await until(lambda: r.history.ops[held.submission_ref].ambiguous, "ambiguous", 30)
        await provider_hits(fake, seen + 1)
        epoch = r.sup.epoch
        r.restore_network()
        await r.wait_online(60, after=epoch)
        await until(
            lambda: r.history.ops[held.submission_ref].outcome is not None, "held settled", 60
        )
        gate.set()
        await r.wait_reply(key, "held answer two", 60)
        rows = await gateway_rows(r, key)
        op = r.history.ops[held.submission_ref]
        earlier += [("user", held.text), ("assistant", "held answer two")]
        after.append(("20a-running", *await earlier_kept(r, key, earlier)))
        record_figure(
            f"20a-running@{tag}",
            "cut while the turn still runs (provider gate): confirmed, never restored; "
            "its reply completes on the new socket; ran once",
            f"outcome {op.outcome.value if op.outcome else None}, sent "
            f"{submits(r, held.text)}, user rows {users(rows)[held.text]}, restored "
            f"{r.restored.count(held.text)}",
            op.outcome is Outcome.CONFIRMED
            and submits(r, held.text) == 1
            and users(rows)[held.text] == 1
            and cut.text not in r.restored
            and held.text not in r.restored,
        )

        # 20b: prompt.submit never reaches the gateway.
        seen = len(fake.requests)
        r.proxy.set_mode("blackhole", direction="up")
        lost = r.submit(key, "cut prompt that never arrived")
        await until(lambda: r.history.ops[lost.submission_ref].ambiguous, "ambiguous", 30)
        epoch = r.sup.epoch
        r.restore_network()
        await r.wait_online(60, after=epoch)
        await until(
            lambda: r.history.ops[lost.submission_ref].outcome is not None, "lost settled", 60
        )
        rows = await gateway_rows(r, key)
        op = r.history.ops[lost.submission_ref]
        after.append(("20b", *await earlier_kept(r, key, earlier)))
        record_figure(
            f"20b@{tag}",
            "cut before the gateway got prompt.submit: restored to the composer, not run",
            f"outcome {op.outcome.value if op.outcome else None}, user rows "
            f"{users(rows)[lost.text]}, composer {r.composer_text(key)!r}, provider requests "
            f"{len(fake.requests) - seen}",
            op.outcome is Outcome.RESTORED
            and users(rows)[lost.text] == 0
            and r.composer_text(key) == lost.text
            and len(fake.requests) == seen,
        )

        # F1: a follow-up while the reply runs gets its own turn and its own bubble.
        gate = threading.Event()
        fake.script = [
            {"content": "first of two answers", "gate": gate},
            {"content": "second of two answers"},
        ]
        seen = len(fake.requests)
        first = r.submit(key, "first question")
        await provider_hits(fake, seen + 1)
        conv = r.router.conversation(key)
        assert conv is not None
        await until(lambda: conv.running, "the first reply runs", 30)
        second = r.submit(key, "follow-up question")
        await until(
            lambda: _error(r, second.submission_ref) == HELD or submits(r, second.text) > 0,
            "follow-up held or sent",
            10,
        )
        sent_while_busy = submits(r, second.text)
        gate.set()
        with contextlib.suppress(AssertionError):  # the figure below says what came
            await r.wait_reply(key, "second of two answers", 90)
        await until(lambda: not conv.running, "both turns over", 30)
        replies = r.replies(key)
        rows = await gateway_rows(r, key)
        tail = rows[-4:]
        expected_tail = [
            ("user", first.text),
            ("assistant", "first of two answers"),
            ("user", second.text),
            ("assistant", "second of two answers"),
        ]
        bubbles = [
            m.text
            for m in conv.messages
            if m.role is Role.ASSISTANT and m.status == "complete" and not m.streaming
        ]
        record_figure(
            f"F1@{tag}",
            "a follow-up sent while the reply streams is held until it ends, then runs as "
            "its own turn: two bubbles, each with its own complete reply; the gateway's "
            "history matches",
            f"sent while busy {sent_while_busy}, bubbles {bubbles[-2:]}, gateway tail {tail}",
            sent_while_busy == 0
            and bubbles[-2:] == ["first of two answers", "second of two answers"]
            and "first of two answers" in replies
            and tail == expected_tail
            and submits(r, first.text) == 1
            and submits(r, second.text) == 1,
        )

        # E1: what each of the three reconnects above left of the earlier turns.
        measured = "; ".join(f"after {cut}: {words}" for cut, words, _ in after)
        whole = all(ok for _, _, ok in after)
        record_figure(
            f"E1@{tag}",
            "after each reconnect (20a, 20a-running, 20b) every earlier prompt and reply is "
            "still on screen and in the local cache, in order, each prompt once",
            measured,
            whole,
        )


def _error(r: Rig, ref: str) -> Any:
    entry = r.store.outbox_get(ref)
    return entry.error if entry is not None else None
