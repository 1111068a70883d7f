"""Requests the agent blocks on, asked while the client is cut off, against real Hermes."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from tests.core import test_hermes_requests as requests_022
from tests.core.test_hermes_agent import DONE, agent, chmod_turn, clarify_turn, mode
from tests.reliability.conftest import RecordFigure
from tests.support.hermes_env import HERMES_019, HERMES_0201, HERMES_022

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(240)]


async def test_a7_approval_asked_offline_shown_after_reconnect(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    async with agent(tmp_path, HERMES_0201) as a:
        gate = threading.Event()
        a.fake.script = chmod_turn(a.scratch, gate)
        key = await a.start_chat("make the scratch file shared")
        await asyncio.to_thread(a.fake.wait_until, lambda f: bool(f.script) and len(f.script) < 2)
        await a.cut()
        gate.set()  # Hermes asks for approval with no client attached
        await a.gateway_waits(key, "approval")
        await a.restore()
        reattached = time.monotonic()
        card = await a.card("approval", "approval card after the reconnect")
        shown_after = time.monotonic() - reattached
        a.ctl.respond(key, card.request_id, "once")
        await a.completed(key, "turn completed")
        replies = a.replies(key)
        cards = len(a.seen.requests())
        record_figure(
            "A7@0.20.1",
            "approval asked while offline shown once after the reconnect; approving completes "
            "the turn with exactly one reply",
            f"{cards} card, shown {shown_after:.2f} s after reattach; replies {replies}; "
            f"file mode {oct(mode(a.scratch))}",
            cards == 1 and replies == [DONE] and mode(a.scratch) == 0o777,
        )


async def test_a8_question_asked_offline_on_legacy_hermes_is_stated(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    async with agent(tmp_path, HERMES_019) as a:
        gate = threading.Event()
        a.fake.script = clarify_turn(gate)
        key = await a.start_chat("deploy it")
        await asyncio.to_thread(a.fake.wait_until, lambda f: bool(f.script) and len(f.script) < 2)
        await a.cut()
        gate.set()
        await a.gateway_waits(key, "waiting")
        await a.restore()
        card = await a.card("waiting", "the cannot-show notice")
        a.ctl.respond(key, card.request_id, "stop")
        await a.until(lambda: not a.conv(key).running, "turn stopped", 60)
        kinds = [r.kind for r in a.seen.requests()]
        replies = a.replies(key)
        record_figure(
            "A8@0.19.0",
            "0.19 question asked while offline: the turn says it waits on an answer the app "
            "cannot show; Stop ends it, at most one reply",
            f"cards {kinds}; running {a.conv(key).running}; replies {len(replies)}",
            kinds == ["waiting"] and not a.conv(key).running and len(replies) <= 1,
        )


async def test_a7_approval_asked_offline_on_hermes_022(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    got = await requests_022.approval_offline(tmp_path, HERMES_022)
    record_figure(
        "A7@0.22.2",
        "0.22 approval (a server request) asked while offline: one card after the reconnect "
        "(from open_requests, no 'cannot show' card); approving by the old srq id runs it once",
        f"cards {got['cards']}, shown {got['shown_after']:.2f} s after reattach; replies "
        f"{got['replies']}; command ran {got['ran']}",
        got["cards"] == ["approval"] and got["replies"] == [requests_022.DONE] and got["ran"],
    )


async def test_a7c_approval_asked_connected_on_hermes_022(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    got = await requests_022.approval_connected(tmp_path, HERMES_022)
    record_figure(
        "A7c@0.22.2",
        "0.22 approval asked while connected: one card, approval.received sent once; "
        "approving runs the command and the turn completes once",
        f"cards {got['cards']}; approval.received x{got['received']}; replies "
        f"{got['replies']}; command ran {got['ran']}",
        got["cards"] == ["approval"]
        and got["received"] == 1
        and got["replies"] == [requests_022.DONE]
        and got["ran"],
    )


async def test_a8_two_questions_asked_offline_on_hermes_022(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    got = await requests_022.clarify_offline(tmp_path, HERMES_022)
    answers = [r.get("user_response") for r in got["result"]["responses"]]
    record_figure(
        "A8@0.22.2",
        "0.22 clarify with two questions asked while offline: one card with both; both "
        "answers reach the agent; one reply",
        f"cards {got['cards']}, questions {len(got['card'].questions)}; answers {answers}; "
        f"replies {got['replies']}",
        got["cards"] == ["clarify"]
        and len(got["card"].questions) == 2
        and answers[0] == "prod"
        and got["replies"] == ["Deploying."],
    )
