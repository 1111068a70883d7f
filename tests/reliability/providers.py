"""A deterministic streaming provider for the gateway under test (in-process or a child)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

from desktop.gateway.providers.base import ChatMessage, Chunk, ChunkKind, Usage

WORDS_ENV = "HQT_RELIABILITY_WORDS"
INTERVAL_ENV = "HQT_RELIABILITY_INTERVAL"


def expected_reply(prompt: str, words: int) -> str:
    """The exact reply the provider streams for `prompt`: what the client must end up with."""
    return f"echo[{prompt.strip()}]" + "".join(f" w{i:03d}" for i in range(words))


class ScriptedProvider:
    """Streams `expected_reply(prompt)` as one chunk per word, `interval` seconds apart."""

    name = "scripted"

    def __init__(self, *, words: int = 8, interval: float = 0.0) -> None:
        self.words = words
        self.interval = interval
        self.last_usage: Usage | None = None
        self.turns = 0

    async def stream(self, messages: list[ChatMessage]) -> AsyncIterator[Chunk]:
        self.turns += 1
        prompt = next((m.content for m in reversed(messages) if m.role == "user"), "")
        text = expected_reply(prompt, self.words)
        head, *rest = text.split(" ")
        yield Chunk(ChunkKind.TEXT, head)
        for word in rest:
            if self.interval > 0:
                await asyncio.sleep(self.interval)
            else:
                await asyncio.sleep(0)
            yield Chunk(ChunkKind.TEXT, " " + word)
        self.last_usage = Usage(1, self.words, provider=self.name, model="scripted")

    async def aclose(self) -> None:
        return None


def from_env() -> ScriptedProvider:
    """`--provider tests.reliability.providers:from_env` for a gateway child process."""
    return ScriptedProvider(
        words=int(os.environ.get(WORDS_ENV, "8")),
        interval=float(os.environ.get(INTERVAL_ENV, "0")),
    )
