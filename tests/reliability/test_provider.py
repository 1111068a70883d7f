"""Provider faults P1-P4 end to end: gateway -> fallback chain -> fake OpenAI behind the proxy."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop.common.retry import RetrySchedule
from desktop.gateway.providers.fallback import FallbackChain
from desktop.gateway.providers.openai import OpenAICompatibleProvider
from tests.reliability.conftest import RecordFigure
from tests.reliability.rig import Rig, rig, until
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.fault_proxy import FaultProxy

pytestmark = pytest.mark.slow
IDLE = 1.0  # the provider's stream idle timeout (production 60-90 s), scaled
PRIMARY = "primary answer " * 6
FALLBACK = "FALLBACK answer " * 6


@contextlib.contextmanager
def providers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer, FaultProxy]]:
    with (
        FakeOpenAIServer(PRIMARY, chunk_size=8, chunk_delay=0.02) as primary,
        FakeOpenAIServer(FALLBACK, chunk_size=8) as fallback,
    ):
        proxy = FaultProxy(primary.port).start()
        try:
            yield primary, fallback, proxy
        finally:
            proxy.stop()


def chain(proxy: FaultProxy, fallback: FakeOpenAIServer) -> FallbackChain:
    def make(name: str, port: int) -> OpenAICompatibleProvider:
        url = f"http://127.0.0.1:{port}/v1"
        return OpenAICompatibleProvider(name, url, "x", "fake-model", idle_timeout=IDLE)

    return FallbackChain(
        [make("primary", proxy.port), make("fallback", fallback.port)],
        probe_retry=RetrySchedule(0.2, 0.5),
    )


@contextlib.asynccontextmanager
async def stack(tmp: Path, proxy: FaultProxy, fallback: FakeOpenAIServer) -> AsyncIterator[Rig]:
    provider = chain(proxy, fallback)
    try:
        async with rig(tmp, provider=provider, call_timeout=10.0) as r:
            frames: list[tuple[float, str]] = []

            def log(frame: str | bytes) -> list[str | bytes]:
                frames.append((time.monotonic(), frame if isinstance(frame, str) else ""))
                return [frame]

            r.inbound_filter = log
            r.frames = frames  # type: ignore[attr-defined]
            await r.wait_online()
            yield r
    finally:
        await provider.aclose()


def done(r: Rig, key: str, n: int) -> bool:
    conv = r.router.conversation(key)
    assert conv is not None
    return sum(1 for m in conv.messages if m.role.value == "assistant" and not m.streaming) >= n


def last_reply(r: Rig, key: str) -> Any:
    conv = r.router.conversation(key)
    assert conv is not None
    return [m for m in conv.messages if m.role.value == "assistant"][-1]


async def test_p1_idle_keepalive_closed_by_provider(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    with providers() as (primary, fallback, proxy):
        async with stack(tmp_path, proxy, fallback) as r:
            key = await r.create_session()
            r.submit(key, "first")
            await until(lambda: done(r, key, 1), "first reply")
            closed = primary.close_idle_keepalive()
            r.submit(key, "second")
            await until(lambda: done(r, key, 2), "second reply")
            second = last_reply(r, key)
            record_figure(
                "P1",
                "idle keep-alive closed by provider: next turn answered by it, 0 errors",
                f"{closed} idle conn closed; turn 2 status {second.status}, "
                f"primary={second.text.strip() == PRIMARY.strip()}",
                closed >= 1 and second.status == "complete" and "FALLBACK" not in second.text,
            )


async def test_p2_provider_blackhole_mid_stream(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    with providers() as (_primary, fallback, proxy):
        async with stack(tmp_path, proxy, fallback) as r:
            key = await r.create_session()
            r.submit(key, "stall")
            conv = r.router.conversation(key)
            await until(
                lambda: any("primary" in m.text for m in conv.messages),
                "primary streaming",
            )
            proxy.set_mode("blackhole")
            await until(lambda: done(r, key, 1), "fallback reply", 10)
            frames = r.frames  # type: ignore[attr-defined]
            fallback_at = [t for t, f in frames if "FALLBACK" in f or "unreachable" in f]
            primary_at = [t for t, f in frames if "message.delta" in f and t < fallback_at[0]]
            gap = fallback_at[0] - primary_at[-1]
            reply = last_reply(r, key)
            record_figure(
                "P2",
                f"idle timeout {IDLE:g} s (<= 90 s), then fallback <= 2 s later",
                f"fallback {gap:.3f} s after the last primary byte "
                f"({gap - IDLE:.3f} s after the idle timeout)",
                gap >= IDLE * 0.97 and gap - IDLE <= 2.0 and "FALLBACK" in reply.text,
            )


@pytest.mark.parametrize("fault", ["reset", "refused", "503"])
async def test_p3_provider_reset_refused_5xx(
    tmp_path: Path, record_figure: RecordFigure, fault: str
) -> None:
    with providers() as (primary, fallback, proxy):
        async with stack(tmp_path, proxy, fallback) as r:
            key = await r.create_session()
            if fault == "reset":
                proxy.set_mode("reset")
            elif fault == "refused":
                proxy.target_port = 1  # nothing listens there
            else:
                primary.status = 503
            started = time.monotonic()
            r.submit(key, f"fault {fault}")
            await until(lambda: done(r, key, 1), "fallback reply", 10)
            took = time.monotonic() - started
            reply = last_reply(r, key)
            record_figure(
                f"P3-{fault}",
                "answered by the fallback <= 2 s",
                f"{reply.status}, fallback={'FALLBACK' in reply.text}, {took:.2f} s",
                reply.status == "complete" and "FALLBACK" in reply.text and took <= 2.0,
            )


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_p4_provider_flap_soak(tmp_path: Path, record_figure: RecordFigure) -> None:
    """Transient failures retried forever at the cap; a fatal one (401) stops; fds flat."""
    with providers() as (primary, fallback, proxy):
        async with stack(tmp_path, proxy, fallback) as r:
            key = await r.create_session()
            r.submit(key, "warm up")
            await until(lambda: done(r, key, 1), "warm-up")
            fds = [_fds()]
            faults = ["503", "reset", "pass", "503", "pass", "reset"] * 3
            for i, fault in enumerate(faults):
                primary.status = 503 if fault == "503" else None
                proxy.set_mode("reset" if fault == "reset" else "pass")
                r.submit(key, f"flap {i}")
                await until(lambda n=i + 2: done(r, key, n), f"turn {i}", 15)
                assert last_reply(r, key).status == "complete"
                fds.append(_fds())
            proxy.set_mode("pass")
            primary.status = None
            probes_before = r.gateway.hub.provider.probes  # type: ignore[union-attr]
            fallback.status = 401  # fatal: wrong key on the fallback
            primary.status = 401
            hits = len(primary.requests) + len(fallback.requests)
            r.submit(key, "fatal")
            await until(lambda: done(r, key, len(faults) + 2), "fatal turn ends", 10)
            fatal = last_reply(r, key)
            fatal_requests = len(primary.requests) + len(fallback.requests) - hits
            growth = max(fds) - fds[0]
            record_figure(
                "P4",
                "transient: every turn answered; fatal: 1 request, no retry; fds flat (<= 8)",
                f"{len(faults)} flapping turns ok, probes {probes_before}, fatal -> "
                f"{fatal.status} after {fatal_requests} request(s), fd growth {growth}",
                fatal.status == "error" and fatal_requests == 1 and growth <= 8,
            )
