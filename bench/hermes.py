"""Embedded gateway vs a real Hermes 0.19.0 gateway: same fake provider, same client, same run."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil

from bench.common import Result, emit, skipped
from desktop.core.link.client import JsonRpcGatewayClient
from desktop.core.link.launcher import EmbeddedGatewayLauncher, ProcessLauncher
from desktop.core.link.protocol import Event
from desktop.core.link.supervisor import Endpoint
from tests.support.fake_openai import FakeOpenAIServer

BENCH = "hermes"
REPLY = " ".join(f"word{i:04d}" for i in range(2000))  # ~18 KB in 8-char chunks
URL_ENV = "HERMES_QT_BENCH_OPENAI_URL"


def provider() -> Any:
    """`--provider bench.hermes:provider` for the embedded gateway child."""
    from desktop.gateway.providers.openai import OpenAICompatibleProvider

    return OpenAICompatibleProvider("fake", os.environ[URL_ENV], "x", "fake-model")


def tree_rss_mb(pid: int | None) -> float:
    if pid is None:
        return 0.0
    proc = psutil.Process(pid)
    procs = [proc, *proc.children(recursive=True)]
    return sum(float(p.memory_info().rss) for p in procs) / 2**20


async def one_turn(endpoint: Endpoint) -> tuple[float, float, int]:
    """(time to first delta s, chars per second, delta frames) for one streamed reply."""
    client = JsonRpcGatewayClient(endpoint.url, token=endpoint.token, call_timeout=120)
    deltas: list[tuple[float, int]] = []
    done = asyncio.Event()

    def on_event(event: Event, _gen: int) -> None:
        if event.type == "message.delta":
            deltas.append((time.perf_counter(), len(str(event.payload.get("text", "")))))
        elif event.type in ("message.complete", "error"):
            done.set()

    client.subscribe(on_event)
    await client.connect()
    try:
        created = await client.call("session.create", {"title": "bench"})
        started = time.perf_counter()
        await client.call("prompt.submit", {"session_id": created["session_id"], "text": "go"})
        await asyncio.wait_for(done.wait(), 120)
    finally:
        await client.close()
    if not deltas:
        raise RuntimeError("no message.delta arrived")
    span = max(1e-6, deltas[-1][0] - deltas[0][0])
    return deltas[0][0] - started, sum(n for _, n in deltas) / span, len(deltas)


@contextlib.asynccontextmanager
async def running(launcher: ProcessLauncher) -> AsyncIterator[Endpoint]:
    try:
        yield await launcher.endpoint()
    finally:
        await launcher.close()


async def measure(tmp: Path, base_url: str) -> dict[str, tuple[float, float, int, float]]:
    out: dict[str, tuple[float, float, int, float]] = {}
    os.environ[URL_ENV] = base_url
    embedded = EmbeddedGatewayLauncher(
        tmp / "embedded", extra_args=["--provider", "bench.hermes:provider"]
    )
    async with running(embedded) as endpoint:
        await one_turn(endpoint)  # warm-up: imports, first provider connection
        first, rate, n = await one_turn(endpoint)
        out["embedded"] = (first, rate, n, tree_rss_mb(embedded.pid))
    from tests.support.hermes_env import HermesUnavailable, hermes_gateway

    try:
        async with hermes_gateway(tmp / "hermes", base_url) as gw:
            endpoint = Endpoint(gw.url, gw.token)
            await one_turn(endpoint)
            first, rate, n = await one_turn(endpoint)
            out["hermes"] = (first, rate, n, tree_rss_mb(gw.pid))
    except HermesUnavailable as exc:
        print(f"hermes unavailable: {exc}")
    return out


def main() -> int:
    if not os.environ.get("HERMES_QT_HERMES_BIN") and Path("/tmp/hermesvenv/bin/hermes").exists():
        os.environ["HERMES_QT_HERMES_BIN"] = "/tmp/hermesvenv/bin/hermes"
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(REPLY, chunk_size=8) as fake:
        try:
            figures = asyncio.run(measure(Path(tmp), fake.base_url))
        except Exception as exc:  # any failure here is reported as a skip with its reason
            emit([skipped(BENCH, "embedded vs hermes 0.19.0", "informational", repr(exc)[:200])])
            return 0
    emb = figures["embedded"]
    her = figures.get("hermes")
    rows = []
    for i, (name, unit, scale) in enumerate(
        [("time to first delta", "ms", 1000.0), ("streamed chars per second", "chars/s", 1.0)]
    ):
        rows.append(
            Result(
                BENCH,
                name,
                "informational (embedded vs real Hermes)",
                emb[i] * scale,
                unit,
                None if her is None else her[i] * scale,
                "hermes-agent 0.19.0",
                None,
                f"part: the gateway process alone, client socket to it; "
                f"{len(REPLY):,}-char reply from the fake OpenAI server; delta frames "
                f"embedded {emb[2]}, hermes {'-' if her is None else her[2]}",
            )
        )
    rows.append(
        Result(
            BENCH,
            "gateway process RSS",
            "informational",
            emb[3],
            "MB",
            None if her is None else her[3],
            "hermes-agent 0.19.0",
            None,
            "part: the gateway process alone; after two turns; process tree",
        )
    )
    emit(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
