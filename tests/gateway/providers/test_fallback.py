"""The fallback chain: failover before and during an answer, the health watcher, switch back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from desktop.common.clock import ManualClock
from desktop.common.retry import RetrySchedule
from desktop.gateway.providers.base import (
    ChatMessage,
    Chunk,
    ChunkKind,
    ProviderError,
    Usage,
)
from desktop.gateway.providers.fallback import FallbackChain
from desktop.gateway.providers.openai import OpenAICompatibleProvider
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.fault_proxy import FaultProxy, tcp_states

HELLO = [ChatMessage("user", "hello")]


class StubProvider:
    """Answers `reply`, or fails with `error` after `fail_after` chunks; probes per `healthy`."""

    def __init__(self, name: str, reply: str = "ok") -> None:
        self.name = name
        self.reply = reply
        self.error: ProviderError | None = None
        self.fail_after = 0
        self.healthy = True
        self.calls = 0
        self.probes = 0
        self.closed = False

    @property
    def last_usage(self) -> Usage | None:
        return Usage(provider=self.name)

    async def stream(self, messages: list[ChatMessage]) -> AsyncIterator[Chunk]:
        self.calls += 1
        for i, word in enumerate(self.reply.split()):
            if self.error is not None and i == self.fail_after:
                raise self.error
            yield Chunk(ChunkKind.TEXT, word)
        if self.error is not None:
            raise self.error

    async def probe(self) -> None:
        self.probes += 1
        if not self.healthy:
            raise ProviderError("down", transport=True)

    async def aclose(self) -> None:
        self.closed = True


async def run(chain: FallbackChain) -> list[Chunk]:
    return [chunk async for chunk in chain.stream(HELLO)]


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_transport_failure_mid_answer_restarts_with_the_fallback() -> None:
    primary, backup = StubProvider("alpha", "one two three"), StubProvider("beta", "four five")
    primary.error, primary.fail_after = ProviderError("reset", transport=True), 2
    chain = FallbackChain([primary, backup], clock=ManualClock())
    try:
        chunks = await run(chain)
        assert [c.text for c in chunks] == [
            "one",
            "two",
            "Primary provider alpha is unreachable; answering with beta",
            "four",
            "five",
        ]
        assert chunks[2].kind is ChunkKind.NOTICE and chunks[2].restart
        assert chain.degraded and chain.last_usage == Usage(provider="beta")
        await run(chain)  # the next turn goes straight to the fallback
        assert (primary.calls, backup.calls) == (1, 2)
    finally:
        await chain.aclose()
    assert primary.closed and backup.closed


async def test_non_transport_error_ends_the_turn_without_fallback() -> None:
    primary, backup = StubProvider("alpha"), StubProvider("beta")
    primary.error = ProviderError("API key rejected by alpha", transport=False, status=401)
    chain = FallbackChain([primary, backup], clock=ManualClock())
    try:
        with pytest.raises(ProviderError, match="API key rejected"):
            await run(chain)
        assert (primary.calls, backup.calls) == (1, 0)
        assert not chain.degraded
    finally:
        await chain.aclose()


async def test_all_providers_down_raises_the_last_transport_error() -> None:
    primary, backup = StubProvider("alpha"), StubProvider("beta")
    primary.error = ProviderError("refused", transport=True)
    backup.error = ProviderError("beta refused", transport=True)
    chain = FallbackChain([primary, backup], clock=ManualClock())
    try:
        with pytest.raises(ProviderError, match="beta refused"):
            await run(chain)
    finally:
        await chain.aclose()


async def test_watcher_probes_with_capped_backoff_then_switches_back() -> None:
    clock = ManualClock()
    primary, backup = StubProvider("alpha"), StubProvider("beta")
    primary.error, primary.healthy = ProviderError("refused", transport=True), False
    chain = FallbackChain([primary, backup], clock=clock, probe_retry=RetrySchedule(2, 8))
    try:
        await run(chain)
        delays = []
        for _ in range(5):
            await settle()
            deadline = clock.next_deadline()
            assert deadline is not None
            delays.append(deadline - clock.monotonic())
            clock.advance(delays[-1])
        assert delays == [2, 4, 8, 8, 8]
        await settle()
        assert primary.probes == 5 and chain.degraded
        primary.error, primary.healthy = None, True
        clock.advance(8)
        await asyncio.wait_for(chain.wait_primary_healthy(), 5)
        chunks = await run(chain)
        assert chunks[0].kind is ChunkKind.NOTICE and "alpha is reachable again" in chunks[0].text
        assert [c.text for c in chunks[1:]] == ["ok"]
        assert primary.calls == 2 and clock.pending == 0  # watcher finished, no timer left
    finally:
        await chain.aclose()


async def test_aclose_stops_the_watcher_while_degraded() -> None:
    clock = ManualClock()
    primary, backup = StubProvider("alpha"), StubProvider("beta")
    primary.error, primary.healthy = ProviderError("refused", transport=True), False
    chain = FallbackChain([primary, backup], clock=clock)
    await run(chain)
    await settle()
    assert clock.pending == 1
    await chain.aclose()
    assert clock.pending == 0  # conftest would fail the test on a leaked watcher task


async def test_end_to_end_blackhole_fallback_and_switch_back_leaves_no_close_wait() -> None:
    with (
        FakeOpenAIServer(reply="primary " * 60, chunk_delay=0.005) as fake_a,
        FakeOpenAIServer(reply="Answer from the fallback.") as fake_b,
        FaultProxy(fake_a.port) as proxy,
    ):
        primary = OpenAICompatibleProvider(
            "alpha",
            f"http://127.0.0.1:{proxy.port}/v1",
            "k",
            "m",
            idle_timeout=0.5,
            connect_timeout=0.5,
        )
        backup = OpenAICompatibleProvider("beta", fake_b.base_url, "k", "m", idle_timeout=5)
        chain = FallbackChain([primary, backup], probe_retry=RetrySchedule(0.05, 0.2))
        try:
            chunks: list[Chunk] = []
            async for chunk in chain.stream(HELLO):
                chunks.append(chunk)
                if len(chunks) == 3:
                    proxy.set_mode("blackhole", direction="down")
            notices = [c for c in chunks if c.kind is ChunkKind.NOTICE]
            assert [n.text for n in notices] == [
                "Primary provider alpha is unreachable; answering with beta"
            ]
            after = "".join(c.text for c in chunks[chunks.index(notices[0]) + 1 :])
            assert after == "Answer from the fallback."
            assert len(fake_b.requests) == 1

            proxy.set_mode("pass")
            await asyncio.wait_for(chain.wait_primary_healthy(), 10)
            chunks = [c async for c in chain.stream(HELLO)]
            assert "reachable again" in chunks[0].text
            assert "".join(c.text for c in chunks[1:]) == fake_a.reply
            assert "CLOSE_WAIT" not in tcp_states(proxy.port)
        finally:
            await chain.aclose()
