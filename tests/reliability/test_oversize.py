"""Fault matrix 16 and A1: a frame over the client's limit, and a history larger than a frame."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from desktop.core.chats.router import too_large_message
from desktop.core.link.launcher import EmbeddedGatewayLauncher
from desktop.core.models import ConnectionState, Role
from desktop.gateway.sessions.hub import SessionHub
from tests.reliability.clocks import ScaledClock
from tests.reliability.conftest import RecordFigure
from tests.reliability.providers import expected_reply
from tests.reliability.rig import TOKEN, Rig, rig, until
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.hermes_env import hermes_gateway, require_hermes

pytestmark = pytest.mark.slow

LIMIT = 64 * 1024  # the scaled frame limit (production: 8 MiB)
VIRTUAL_MINUTE = 60.0


async def _fill(r: Rig, key: str, turns: int, size: int) -> list[str]:
    """Prompts of `size` chars, each echoed back: a history about 2 x turns x size long."""
    prompts = [f"p{n} " + "x" * size for n in range(turns)]
    for prompt in prompts:
        r.submit(key, prompt)
        await r.wait_reply(key, expected_reply(prompt, r.opt.words))
    return prompts


async def _a_virtual_minute(clock: ScaledClock) -> None:
    start = clock.monotonic()
    await until(lambda: clock.monotonic() - start >= VIRTUAL_MINUTE, "a virtual minute", 30)


def _history_calls(r: Rig) -> int:
    return sum(json.loads(s).get("method") == "session.history" for s in r.sent)


async def test_16_oversized_frame_on_a_real_socket(
    tmp_path: Path, record_figure: RecordFigure, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gateway that ignores omit_messages and has no frame limit (like Hermes 0.19) sends a
    snapshot over the client's limit: websockets closes the socket with 1009. That must not
    become a reconnect loop: the session is marked, the others keep working."""
    original = SessionHub.snapshot

    def hermes_like(self: SessionHub, session: Any, *, omit_messages: bool = False) -> Any:
        return original(self, session)  # always with messages

    clock = ScaledClock(20)  # backoff and the virtual minute run 20x faster
    async with rig(tmp_path, max_frame=LIMIT, sup_clock=clock) as r:
        await r.wait_online()
        big = await r.create_session("big")
        small = await r.create_session("small")
        await _fill(r, big, turns=6, size=6000)  # ~72 KB of history, over the 64 KB limit
        monkeypatch.setattr(SessionHub, "snapshot", hermes_like)
        epoch = r.sup.epoch
        r.sup.reconnect_now()  # reactivation asks for both snapshots again
        conv = r.router.conversation(big)
        assert conv is not None
        await until(lambda: bool(conv.load_error), "the big chat says why it is not shown")
        await r.wait_online(after=epoch)
        too_big = [d for d in r.deaths if d.code == 1009]
        settled = len(r.deaths)
        await _a_virtual_minute(clock)
        deaths_after = len(r.deaths) - settled
        r.submit(small, "still here")
        await r.wait_reply(small, expected_reply("still here", r.opt.words))
        assert conv.load_error.startswith(too_large_message("")[:40])
        other = r.router.conversation(small)
        assert other is not None
        record_figure(
            "16",
            "a frame over the limit (real 1009 close): <= 2 closes, then 0 reconnects; "
            "that chat says why, the others keep working",
            f"{len(too_big)} closes with 1009, then {deaths_after} in a virtual minute; "
            f"chat marked: {bool(conv.load_error)}; other chat marked: "
            f"{bool(other.load_error)}, replied; "
            f"{r.sup.status.state.value}",
            1 <= len(too_big) <= 2
            and not other.load_error
            and deaths_after == 0
            and r.sup.status.state is ConnectionState.ONLINE,
        )


async def test_a1_oversized_snapshot_opens_with_paged_history(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    """A real embedded gateway process with a history three times its frame limit: a new
    client (the app relaunched with that chat remembered) opens it, paged, with no loop."""
    launcher = EmbeddedGatewayLauncher(
        tmp_path / "gateway",
        token=TOKEN,
        extra_args=[
            "--config-dir",
            str(tmp_path / "config"),
            "--provider",
            "tests.reliability.providers:from_env",
            "--max-frame",
            str(LIMIT),
        ],
    )
    try:
        url = (await launcher.endpoint()).url
        async with rig(tmp_path / "first", gateway=False, url=url, max_frame=LIMIT) as first:
            await first.wait_online()
            big = await first.create_session("big")
            small = await first.create_session("small")
            prompts = await _fill(first, big, turns=8, size=10_000)  # ~160 KB of history
        clock = ScaledClock(20)
        relaunch = tmp_path / "relaunch"
        async with rig(
            relaunch, gateway=False, url=url, max_frame=LIMIT, sup_clock=clock, start=False
        ) as r:
            for key in (big, small):  # remembered from the last run
                r.router.route(key)
            r.sup.start()
            await r.wait_online()
            conv = r.router.conversation(big)
            assert conv is not None
            await _a_virtual_minute(clock)
            shown = [m.text for m in conv.messages if m.role in (Role.USER, Role.ASSISTANT)]
            want = [t for p in prompts for t in (p, expected_reply(p, r.opt.words))]
            size = len(json.dumps(want))
            pages = _history_calls(r)
            r.submit(small, "other chat")
            await r.wait_reply(small, expected_reply("other chat", r.opt.words))
            record_figure(
                "A1",
                "oversized snapshot: reconnects in a minute = 0 loops; the chat opens (paged), "
                "other chats work",
                f"{len(r.deaths)} socket closes, {r.reconnects()} reconnects in a virtual "
                f"minute; {len(shown)}/{len(want)} messages shown ({size // 1024} KB over "
                f"{pages} history pages, frame limit {LIMIT // 1024} KB); other chat replied",
                not r.deaths
                and r.reconnects() == 0
                and shown == want
                and not conv.load_error
                and pages >= 2,
            )
    finally:
        await launcher.close()


@pytest.mark.hermes
async def test_16_hermes_oversized_snapshot_is_no_loop(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    """Real Hermes 0.19 (no frame limit, omit_messages ignored): a history over the client's
    frame limit closes the socket once; the chat is marked and the others keep working."""
    require_hermes()
    clock = ScaledClock(20)
    with FakeOpenAIServer("ok", chunk_size=8) as fake:
        async with (
            hermes_gateway(tmp_path / "home", fake.base_url) as gw,
            rig(
                tmp_path,
                gateway=False,
                url=gw.url,
                token=gw.token,
                max_frame=LIMIT,
                sup_clock=clock,
            ) as r,
        ):
            await r.wait_online(60)
            big = await r.create_session("big")
            small = await r.create_session("small")
            for n in range(9):  # ~72 KB of prompts, over the 64 KB limit
                r.submit(big, f"p{n} " + "x" * 8000)
                await until(lambda n=n: len(r.replies(big)) == n + 1, f"reply {n}", 60)
            await r.settled(60)
            epoch = r.sup.epoch
            r.sup.reconnect_now()
            conv = r.router.conversation(big)
            other = r.router.conversation(small)
            assert conv is not None and other is not None
            await until(lambda: bool(conv.load_error), "the big chat says why", 60)
            await r.wait_online(60, after=epoch)
            too_big = [d for d in r.deaths if d.code == 1009]
            settled = len(r.deaths)
            await _a_virtual_minute(clock)
            deaths_after = len(r.deaths) - settled
            r.submit(small, "still here")
            await until(lambda: len(r.replies(small)) == 1, "the other chat replies", 60)
            record_figure(
                "16@0.19.0",
                "0.19, history over the frame limit: <= 2 closes (1009), then 0 "
                "reconnects; that chat says why, the others keep working",
                f"{len(too_big)} closes with 1009, then {deaths_after} in a virtual minute; "
                f"chat marked: {bool(conv.load_error)}; other chat marked: "
                f"{bool(other.load_error)}, replied",
                1 <= len(too_big) <= 2 and not other.load_error and deaths_after == 0,
            )


async def test_a_long_chat_reaped_by_the_gateway_comes_back_whole(tmp_path: Path) -> None:
    """Reaped while no socket owned it, a session is resumed by its stored id (4001 on
    activate): without its messages, then paged, since they do not fit one frame."""
    async with rig(tmp_path, max_frame=LIMIT, server_max_frame=LIMIT) as r:
        assert r.gateway is not None
        await r.wait_online()
        big = await r.create_session("big")
        prompts = await _fill(r, big, turns=6, size=6000)
        hub = r.gateway.hub
        epoch, runtime = r.sup.epoch, r.router.runtime_id(big)
        hub.close(hub.get(runtime))  # reaped: its runtime id is gone
        r.sup.reconnect_now()
        await r.wait_online(after=epoch)
        assert r.router.runtime_id(big) != runtime
        conv = r.router.conversation(big)
        assert conv is not None and not conv.load_error
        want = [t for p in prompts for t in (p, expected_reply(p, r.opt.words))]
        assert [m.text for m in conv.messages] == want
        r.submit(big, "after the reap")
        await r.wait_reply(big, expected_reply("after the reap", r.opt.words))
        assert not [d for d in r.deaths if d.code == 1009]
