"""A scripted in-process Provider for gateway tests: fixed chunks, a hold point, scripted errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from desktop.gateway.providers.base import ChatMessage, Chunk, ChunkKind, ProviderError, Usage


def text(*parts: str) -> list[Chunk]:
    return [Chunk(ChunkKind.TEXT, p) for p in parts]


class ScriptedProvider:
    """Yields `chunks` for every turn; pauses after `hold_after` chunks while `hold` is unset."""

    name = "scripted"

    def __init__(
        self,
        chunks: list[Chunk] | None = None,
        *,
        hold: asyncio.Event | None = None,
        hold_after: int = 1,
        error: ProviderError | None = None,
    ) -> None:
        self.chunks = chunks if chunks is not None else text("Hello", ", ", "world")
        self.hold = hold
        self.hold_after = hold_after
        self.error = error
        self.calls: list[list[ChatMessage]] = []
        self.started = asyncio.Event()
        self.closed = False
        self._usage: Usage | None = None

    @property
    def last_usage(self) -> Usage | None:
        return self._usage

    async def stream(self, messages: list[ChatMessage]) -> AsyncIterator[Chunk]:
        self.calls.append(list(messages))
        self.started.set()
        for i, chunk in enumerate(self.chunks):
            if self.hold is not None and i == self.hold_after:
                await self.hold.wait()
            await asyncio.sleep(0)  # a real provider suspends between chunks
            yield chunk
        if self.error is not None:
            raise self.error
        self._usage = Usage(prompt_tokens=3, completion_tokens=len(self.chunks), provider="s")

    async def aclose(self) -> None:
        self.closed = True


class SubprocessProvider:
    """For a gateway run as a process: a prompt containing "block" streams a bit, then hangs."""

    name = "subprocess-scripted"
    last_usage: Usage | None = None

    async def stream(self, messages: list[ChatMessage]) -> AsyncIterator[Chunk]:
        prompt = messages[-1].content
        yield Chunk(ChunkKind.TEXT, "partial answer")
        if "block" in prompt:
            await asyncio.Event().wait()
        yield Chunk(ChunkKind.TEXT, f" to: {prompt}")

    async def aclose(self) -> None:
        return None


def subprocess_provider() -> SubprocessProvider:
    return SubprocessProvider()
