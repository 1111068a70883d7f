"""Liveness over real sockets: silent-drop detection vs the deadline, recovery on network-back."""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import Result, emit
from desktop.common.clock import AsyncioClock
from desktop.core.link.client import JsonRpcGatewayClient
from desktop.core.link.epochs import MemoryEpochStore
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.link.supervisor import ConnectionSupervisor, Endpoint
from desktop.core.models import ConnectionState, ConnectionStatus
from desktop.gateway.providers.offline import OfflineProvider
from desktop.gateway.rpc.server import GatewayConfig, GatewayServer
from tests.support.fault_proxy import FaultProxy

BENCH = "liveness"
INTERVAL = 0.5
DEADLINE = 2.0
TOKEN = "bench-token"


async def until(predicate: Callable[[], bool], event: asyncio.Event, timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            event.clear()
            await event.wait()


async def measure(data_dir: Path) -> tuple[float, float, float, float]:
    """(client detection and status change after the last inbound frame, online after
    net-back, the backoff slot that was pending)."""
    server = GatewayServer(
        GatewayConfig(data_dir=data_dir, token=TOKEN, ping_interval=None),
        OfflineProvider(chunk_interval=0),
    )
    url = await server.start()
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    proxy = FaultProxy(port).start()
    proxied = f"ws://127.0.0.1:{proxy.port}/api/ws"
    clients: list[JsonRpcGatewayClient] = []

    def factory(endpoint: Endpoint) -> JsonRpcGatewayClient:
        client = JsonRpcGatewayClient(
            endpoint.url,
            token=endpoint.token,
            heartbeat_interval=INTERVAL,
            heartbeat_deadline=DEADLINE,
            connect_timeout=10.0,
        )
        clients.append(client)
        return client

    sup = ConnectionSupervisor(
        Profile("bench", "bench", ProfileKind.REMOTE, url=proxied),
        client_factory=factory,
        epoch_store=MemoryEpochStore(),
        clock=AsyncioClock(),
        random=lambda: 0.5,
        token=TOKEN,
    )

    class _Launcher:
        async def endpoint(self) -> Endpoint:
            return Endpoint(proxied, TOKEN)

        def unresponsive(self, reason: str) -> None:
            return None  # a proxy, not a child process: nothing to restart

        async def close(self) -> None:
            return None

    sup._launcher = _Launcher()  # the profile's URL, as a launcher would hand it out
    changed = asyncio.Event()
    statuses: list[tuple[float, ConnectionStatus]] = []

    def on_status(status: ConnectionStatus) -> None:
        statuses.append((time.monotonic(), status))
        changed.set()

    sup.add_status_listener(on_status)
    try:
        sup.start()
        await until(lambda: sup.status.state is ConnectionState.ONLINE, changed, 20)
        client = clients[-1]
        client_closed: list[float] = []
        client.on_closed(lambda *_: client_closed.append(time.monotonic()))
        await asyncio.sleep(3 * INTERVAL)  # a few heartbeats go round first
        proxy.set_mode("blackhole")
        holed_at = time.monotonic()
        await until(lambda: sup.status.state is not ConnectionState.ONLINE, changed, 20)
        shown_at = next(
            t for t, s in statuses if t >= holed_at and s.state is not ConnectionState.ONLINE
        )
        detected_at = client_closed[0] if client_closed else shown_at
        last_inbound = client.last_inbound_at or holed_at
        await until(lambda: sup.status.state is ConnectionState.RECONNECTING, changed, 20)
        retry_at = sup.status.retry_at or 0.0
        proxy.set_mode("pass")
        back_at = time.monotonic()
        slot = max(0.0, retry_at - back_at)
        sup.network_changed()
        await until(lambda: sup.status.state is ConnectionState.ONLINE, changed, 20)
        online_at = time.monotonic()
        return (
            detected_at - last_inbound,
            shown_at - last_inbound,
            online_at - back_at,
            slot,
        )
    finally:
        await sup.close()
        proxy.stop()
        await server.stop()


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        after_inbound, shown, online, slot = asyncio.run(measure(Path(tmp)))
    ratio = after_inbound / DEADLINE
    rows = [
        Result(
            BENCH,
            "silent drop detected / deadline",
            "<= 1.03",
            ratio,
            "x",
            1.0,
            "the deadline itself",
            ratio <= 1.03,
            "part: client + supervisor against a gateway in-process; "
            f"client closed {after_inbound:.3f} s after the last inbound frame; the supervisor "
            f"showed it at {shown:.3f} s; heartbeat {INTERVAL:g} s, deadline {DEADLINE:g} s, "
            "fault proxy blackhole",
        ),
        Result(
            BENCH,
            "online after network returns",
            "<= 1 s",
            online,
            "s",
            slot,
            "pending backoff slot",
            online <= 1.0,
            "part: client + supervisor; supervisor.network_changed() right after the proxy "
            "passes traffic again",
        ),
    ]
    emit(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
