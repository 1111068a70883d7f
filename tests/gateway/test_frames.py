"""No frame the gateway sends exceeds its frame limit: paged history, capped replies and events."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.common.codec import dumps
from desktop.common.codes import FRAME_TOO_LARGE
from desktop.common.limits import MAX_FRAME_BYTES
from desktop.gateway.wire.frames import prompt_cap
from tests.gateway.scripted import ScriptedProvider, text
from tests.gateway.wsclient import Client, RpcFailure, client, gateway

LIMIT = 16 * 1024


async def _fill(c: Client, turns: int, size: int) -> str:
    """A session whose history (`turns` prompts of `size` chars) is larger than one frame."""
    sid = (await c.call("session.create"))["session_id"]
    for n in range(turns):
        await c.call("prompt.submit", session_id=sid, text=f"{n}:" + "é" * size)
        await c.wait_event("message.complete", sid, n=n + 1)
    return str(sid)


def _largest_frame(c: Client) -> int:
    frames = [dumps(r) for r in c.replies] + [dumps(e) for e in c.events]
    return max(len(f.encode()) for f in frames)


async def test_history_is_paged_and_every_page_fits_a_frame(data_dir: Path) -> None:
    async with gateway(data_dir, ScriptedProvider(), max_frame=LIMIT) as gw, client(gw.url) as c:
        sid = await _fill(c, turns=6, size=2000)  # 6 x ~4 KB of prompts: ~24 KB of history
        whole = [r.to_wire() for r in gw.store.messages(gw.hub.get(sid).stored_id)]
        assert len(dumps(whole).encode()) > LIMIT
        pages, offset = [], 0
        while offset < len(whole):
            got = await c.call("session.history", session_id=sid, offset=offset)
            assert got["count"] == len(whole) and got["offset"] == offset and got["messages"]
            pages.extend(got["messages"])
            offset += len(got["messages"])
        assert pages == whole
        # Without paging parameters: the newest rows that fit (the tail proves what ran).
        tail = await c.call("session.history", session_id=sid)
        assert tail["offset"] > 0 and tail["messages"] == whole[tail["offset"] :]
        assert _largest_frame(c) <= LIMIT


async def test_too_large_snapshot_is_an_error_reply_and_the_link_stays(data_dir: Path) -> None:
    async with gateway(data_dir, ScriptedProvider(), max_frame=LIMIT) as gw, client(gw.url) as c:
        sid = await _fill(c, turns=6, size=2000)
        with pytest.raises(RpcFailure) as too_big:
            await c.call("session.activate", session_id=sid)  # messages asked for: too big
        assert too_big.value.code == FRAME_TOO_LARGE
        assert "too large for one frame" in too_big.value.message
        light = await c.call("session.activate", session_id=sid, omit_messages=True)
        assert "messages" not in light and light["message_count"] == 12
        assert await c.call("gateway.ping") == {"ok": True}
        assert _largest_frame(c) <= LIMIT and not c.closed.is_set()


async def test_a_reply_too_large_for_any_frame_is_sent_cut_and_marked(data_dir: Path) -> None:
    huge = "x" * (3 * LIMIT)
    provider = ScriptedProvider(text(huge))
    async with gateway(data_dir, provider, max_frame=LIMIT) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        await c.call("prompt.submit", session_id=sid, text="say a lot")
        done = await c.wait_event("message.complete", sid)
        assert done["payload"]["truncated"] is True and len(done["payload"]["text"]) < LIMIT
        hist = await c.call("session.history", session_id=sid, offset=1)
        row = hist["messages"][0]
        assert row["truncated"] is True and row["text_chars"] == len(huge)
        assert _largest_frame(c) <= LIMIT


async def test_prompt_cap_follows_the_frame_limit(data_dir: Path) -> None:
    assert prompt_cap(MAX_FRAME_BYTES) == 1_000_000  # the seed contract's cap
    cap = prompt_cap(LIMIT)
    async with gateway(data_dir, ScriptedProvider(), max_frame=LIMIT) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        with pytest.raises(RpcFailure, match=f"longer than {cap}"):
            await c.call("prompt.submit", session_id=sid, text="\x01" * (cap + 1))
        await c.call("prompt.submit", session_id=sid, text="\x01" * cap)
        await c.wait_event("message.complete", sid)
        hist = await c.call("session.history", session_id=sid, offset=0)
        assert len(hist["messages"][0]["text"]) == cap  # 6 bytes a char, and still one frame
        assert _largest_frame(c) <= LIMIT
