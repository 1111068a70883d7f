"""The offline built-in model: labelled, helpful, streamed at a pace, echoing the question."""

from __future__ import annotations

import asyncio
from pathlib import Path

from desktop.common.clock import ManualClock
from desktop.gateway.providers.base import ChatMessage, ChunkKind
from desktop.gateway.providers.offline import OfflineProvider


async def test_streams_a_labelled_markdown_reply_echoing_the_prompt() -> None:
    p = OfflineProvider(Path("/cfg/providers.json"), chunk_interval=0)
    chunks = [c async for c in p.stream([ChatMessage("user", "What is  a monad?")])]
    text = "".join(c.text for c in chunks)
    assert all(c.kind is ChunkKind.TEXT for c in chunks) and len(chunks) > 50
    assert text.startswith("**Offline built-in model**")
    assert "You asked: *What is a monad?*" in text
    assert "Settings → Providers" in text and "/cfg/providers.json" in text
    assert "```python" in text and text.count("```") == 2
    assert p.last_usage is not None and p.last_usage.provider == "offline"


async def test_paces_chunks_on_the_clock() -> None:
    clock = ManualClock()
    p = OfflineProvider(chunk_interval=0.02, clock=clock)
    got: list[str] = []

    async def consume() -> None:
        async for chunk in p.stream([ChatMessage("user", "hi")]):
            got.append(chunk.text)

    task = asyncio.create_task(consume())
    for _ in range(3):
        await asyncio.sleep(0)
    assert len(got) == 1  # the second chunk waits for the clock
    while not task.done():
        clock.advance(0.02)
        await asyncio.sleep(0)
    await task
    assert "".join(got) == p.reply_for([ChatMessage("user", "hi")])
