"""Reconnect at scale: 50 chats routed on one profile, a TCP reset, every chat back.

Part: the app's Qt-free core for one profile (supervisor, client, router, store, outbox and the
ProfileController whose listener is what the window hears), over real sockets through the
fault proxy the tests use, against the embedded gateway in-process. Each chat is opened (so
routed, its history shown); then every connection is reset (RST). Timed from the link back
(online again) to every chat reactivated and consistent: its whole history sent to the
listener again, message for message what the gateway holds. Counted: the whole-list updates
each chat's listener got after the reset (`on_session_messages`; target exactly 1) and the
CPU seconds this process spent from the reset to settled.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import Result, emit
from bench.seed import T0, rows
from desktop.common.clock import AsyncioClock
from desktop.core.disk.store import Store
from desktop.core.link.client import JsonRpcGatewayClient
from desktop.core.link.epochs import MemoryEpochStore
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.link.supervisor import Endpoint
from desktop.core.listeners import BackendListener
from desktop.core.models import ChatMessage, ConnectionState
from desktop.core.profile.assembly import SharedParts, assemble_profile
from desktop.gateway.providers.offline import OfflineProvider
from desktop.gateway.rpc.server import GatewayConfig, GatewayServer
from desktop.gateway.sessions.store import Store as GatewayStore
from tests.support.fault_proxy import FaultProxy

BENCH = "reconnect"
CHATS = 50
PER_CHAT = 40
TOKEN = "bench-token-0123456789"
TARGET_S = 1.0
SETTLE = 1.0  # quiet this long after the last update: nothing more is coming


class Counting(BackendListener):
    """Each chat's whole-list updates (when, how many messages) as the window hears them."""

    def __init__(self) -> None:
        self.updates: dict[str, list[tuple[float, int]]] = {}
        self.status = ConnectionState.CONNECTING
        self.online_at: list[float] = []

    def on_status(self, status: Any) -> None:
        if status.state is ConnectionState.ONLINE and self.status is not ConnectionState.ONLINE:
            self.online_at.append(time.monotonic())
        self.status = status.state

    def on_session_messages(self, key: str, messages: list[ChatMessage]) -> None:
        self.updates.setdefault(key, []).append((time.monotonic(), len(messages)))


async def until(predicate: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.005)


async def measure(tmp: Path) -> dict[str, Any]:
    keys = [f"bench-{k:02d}" for k in range(CHATS)]
    gateway_dir = tmp / "gateway"
    gs = GatewayStore(gateway_dir / "gateway.sqlite3")
    try:
        for k, key in enumerate(keys):
            gs.create_session(key, f"Chat {k}", "desktop", T0 + k)
            gs.import_messages(key, rows(PER_CHAT))
    finally:
        gs.close()
    server = GatewayServer(
        GatewayConfig(data_dir=gateway_dir, token=TOKEN, ping_interval=None),
        OfflineProvider(chunk_interval=0),
    )
    url = await server.start()
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    proxy = FaultProxy(port).start()
    proxied = f"ws://127.0.0.1:{proxy.port}/api/ws"

    class Launcher:
        async def endpoint(self) -> Endpoint:
            return Endpoint(proxied, TOKEN)

        def unresponsive(self, reason: str) -> None:
            return None  # a proxy, not a child process: nothing to restart

        async def close(self) -> None:
            return None

    def clients(endpoint: Endpoint) -> JsonRpcGatewayClient:
        return JsonRpcGatewayClient(endpoint.url, token=endpoint.token, connect_timeout=10.0)

    store = Store(tmp / "app.sqlite3")
    shared = SharedParts.over(store, tmp, clock=AsyncioClock(), epochs=MemoryEpochStore())
    parts = assemble_profile(
        Profile("bench", "bench", ProfileKind.REMOTE, url=proxied),
        shared,
        clients=clients,
        launcher=Launcher(),
        token=TOKEN,
        random=lambda: 0.5,
    )
    controller = parts.controller
    seen = Counting()
    controller.subscribe(seen)
    try:
        controller.start()
        await until(lambda: seen.status is ConnectionState.ONLINE, "online")
        await until(lambda: all(controller.summary(k) for k in keys), "chats listed")
        for key in keys:  # each opened, so routed, as a user reading them in turn would
            controller.open_session(key)
            await until(
                lambda k=key: any(n == PER_CHAT for _, n in seen.updates.get(k, [])),
                f"{key} shown",
            )
        await asyncio.sleep(SETTLE)
        seen.updates.clear()
        cpu0 = time.process_time()
        cut_at = time.monotonic()
        links = len(seen.online_at)
        proxy.reset_all()
        await until(lambda: len(seen.online_at) > links, "online again")
        back_at = seen.online_at[-1]

        def consistent() -> bool:
            return all(any(n == PER_CHAT for _, n in seen.updates.get(k, [])) for k in keys)

        await until(consistent, "every chat shown again")
        done_at = max(next(t for t, n in seen.updates[k] if n == PER_CHAT) for k in keys)
        last = 0.0
        while last != (last := max(t for u in seen.updates.values() for t, _ in u)):
            await asyncio.sleep(SETTLE)  # until quiet: later updates are counted too
        cpu = time.process_time() - cpu0
        per_chat = Counter(len(seen.updates.get(k, [])) for k in keys)
        return {
            "reactivated": done_at - back_at,
            "down": back_at - cut_at,
            "per_chat": dict(per_chat),
            "cpu": cpu,
        }
    finally:
        await controller.close()
        await shared.aclose()
        store.close()
        proxy.stop()
        await server.stop()


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        got = asyncio.run(measure(Path(tmp)))
    counts = got["per_chat"]
    worst = max(counts)
    spread = ", ".join(f"{n} chats x {u}" for u, n in sorted(counts.items()))
    part = (
        f"part: one profile's core (supervisor, client, router, store, ProfileController) "
        f"through the fault proxy to the embedded gateway in-process; {CHATS} chats x "
        f"{PER_CHAT} messages opened (routed), then every connection reset (RST)"
    )
    emit(
        [
            Result(
                BENCH,
                f"{CHATS} chats routed, TCP reset: link back -> every chat reactivated",
                f"<= {TARGET_S:g} s (embedded)",
                got["reactivated"],
                "s",
                got["down"],
                "reset -> link back",
                got["reactivated"] <= TARGET_S,
                part + "; reactivated: its whole history sent to the window again, as many "
                "messages as the gateway holds",
            ),
            Result(
                BENCH,
                f"{CHATS} chats routed, TCP reset: whole-list updates per chat",
                "exactly 1",
                float(worst),
                "updates",
                None,
                "",
                set(counts) == {1},
                f"the most any chat got; {spread} (on_session_messages after the reset)",
            ),
            Result(
                BENCH,
                f"{CHATS} chats routed, TCP reset: CPU seconds to settle",
                "reported",
                got["cpu"],
                "s",
                None,
                "",
                None,
                "this process (client core and the in-process gateway) from the reset to quiet",
            ),
        ]
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
