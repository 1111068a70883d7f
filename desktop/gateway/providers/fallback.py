"""A provider chain: fall back on transport failures, watch the primary, switch back to it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence

from desktop.common.clock import AsyncioClock, Clock
from desktop.common.retry import Retries, RetrySchedule

from .base import ChatMessage, Chunk, ChunkKind, HealthProbe, Provider, ProviderError, Usage

log = logging.getLogger(__name__)

# Probes of a primary that failed, while a fallback answers: 2 s, 4 s ... 60 s, forever.
PROBE = RetrySchedule(first=2.0, cap=60.0)


class FallbackChain:
    """Streams each turn from the active provider, the primary (first) whenever it is healthy.

    A transport failure of the answering provider, before or during its answer, hands the turn
    to the next provider in order, which restarts the completion; the chain yields a NOTICE
    chunk with `restart=True` saying so. Non-transport errors (bad key, unknown model) end the
    turn at once and are never retried. While a fallback is active, a watcher task probes the
    primary with capped exponential backoff, forever, and makes it active again once it answers.
    """

    def __init__(
        self,
        providers: Sequence[Provider],
        *,
        clock: Clock | None = None,
        probe_retry: RetrySchedule = PROBE,
    ) -> None:
        if not providers:
            raise ValueError("a fallback chain needs at least one provider")
        self.providers = list(providers)
        self.name = self.providers[0].name
        self.probe_retry = probe_retry
        self.probes = 0  # health probes sent to the primary so far
        self._clock: Clock = clock or AsyncioClock()
        self._active = 0
        self._announce_recovery = False
        self._watcher: asyncio.Task[None] | None = None
        self._healthy = asyncio.Event()
        self._healthy.set()
        self._last_usage: Usage | None = None
        self._closed = False

    @property
    def primary(self) -> Provider:
        return self.providers[0]

    @property
    def active(self) -> Provider:
        return self.providers[self._active]

    @property
    def degraded(self) -> bool:
        return self._active != 0

    @property
    def last_usage(self) -> Usage | None:
        return self._last_usage

    async def wait_primary_healthy(self) -> None:
        """Return once the primary is the active provider again."""
        await self._healthy.wait()

    async def stream(self, messages: list[ChatMessage]) -> AsyncIterator[Chunk]:
        if self._closed:
            raise ProviderError("the provider chain is closed", transport=False)
        self._last_usage = None
        if self._announce_recovery and self._active == 0:
            self._announce_recovery = False
            text = f"Primary provider {self.name} is reachable again; answering with it"
            yield Chunk(ChunkKind.NOTICE, text)
        index = self._active
        while True:
            provider = self.providers[index]
            try:
                async for chunk in provider.stream(messages):
                    yield chunk
            except ProviderError as exc:
                if not exc.transport:
                    raise
                log.warning("provider %s failed: %s", provider.name, exc.message)
                if index + 1 >= len(self.providers):
                    # Every fallback failed: the next turn starts over at the first one.
                    self._active = min(self._active, 1)
                    raise
                index += 1
                self._degrade(index)
                yield Chunk(ChunkKind.NOTICE, self._notice(provider, index), restart=True)
                continue
            self._last_usage = provider.last_usage
            return

    async def aclose(self) -> None:
        self._closed = True
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        for provider in self.providers:
            await provider.aclose()

    # -- degraded mode -----------------------------------------------------------------------

    def _notice(self, failed: Provider, index: int) -> str:
        role = "Primary provider" if failed is self.primary else "Provider"
        return f"{role} {failed.name} is unreachable; answering with {self.providers[index].name}"

    def _degrade(self, index: int) -> None:
        # Later turns go straight to the provider that last worked, not through a dead primary.
        self._active = max(self._active, index)
        self._healthy.clear()
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(
                self._watch_primary(), name=f"provider-health:{self.name}"
            )

    async def _watch_primary(self) -> None:
        probes = Retries(self.probe_retry)  # from the first delay each time it degrades
        while True:
            await self._clock.sleep(probes.next_delay())
            if await self._probe_primary():
                break
        log.info("primary provider %s is reachable again", self.name)
        self._active = 0
        self._announce_recovery = True
        self._healthy.set()

    async def _probe_primary(self) -> bool:
        self.probes += 1
        primary = self.primary
        try:
            if isinstance(primary, HealthProbe):
                await primary.probe()
            else:
                async for _ in primary.stream([ChatMessage("user", "ping")]):
                    pass
        except ProviderError as exc:
            return not exc.transport  # it answered: whatever is wrong is not the network
        except Exception:  # a probe bug must not end the watch: keep probing at the cap
            log.exception("health probe of %s crashed", self.name)
            return False
        return True
