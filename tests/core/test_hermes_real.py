"""Against a real hermes-agent 0.19.0 gateway: reactivation after a mid-turn drop, and resume."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from desktop.common.clock import AsyncioClock
from desktop.core.chats.conversation import Conversation
from desktop.core.chats.router import SessionRouter
from desktop.core.link.client import JsonRpcGatewayClient
from desktop.core.link.epochs import MemoryEpochStore
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.link.supervisor import ConnectionSupervisor, Endpoint
from desktop.core.models import ConnectionState, Role
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.hermes_env import HermesGateway, hermes_gateway, require_hermes
from tests.support.waiting import Subscribe, wait_notified

pytestmark = [pytest.mark.hermes, pytest.mark.slow]

REPLY = " ".join(f"word{i:03d}" for i in range(120))  # ~960 chars, streamed in 8-char chunks


@pytest.fixture(autouse=True)
def _hermes_available() -> None:
    require_hermes()  # skip (with the reason) before any server is started


async def condition(
    conv: Conversation | None,
    predicate: Callable[[], bool],
    what: str,
    timeout: float = 60.0,
    sup: ConnectionSupervisor | None = None,
    router: SessionRouter | None = None,
) -> None:
    """Wait for predicate, re-checked on conversation, status and sync changes, with a deadline."""
    subscribe: list[Subscribe] = []
    if conv is not None:
        subscribe.append(conv.add_listener)
    if sup is not None:
        subscribe.append(sup.add_status_listener)
    if router is not None:
        subscribe.append(router.on_synced)
    await wait_notified(predicate, subscribe, what, timeout)


async def start_online(sup: ConnectionSupervisor, router: SessionRouter) -> None:
    """Connect and wait until every routed session is attached."""
    sup.start()
    await condition(
        None, lambda: router.synced_epoch == sup.epoch > 0, "online", sup=sup, router=router
    )


def make_supervisor(gw: HermesGateway) -> ConnectionSupervisor:
    profile = Profile(id="hermes", name="Hermes", kind=ProfileKind.REMOTE, url=gw.url)

    def factory(endpoint: Endpoint) -> JsonRpcGatewayClient:
        return JsonRpcGatewayClient(endpoint.url, token=endpoint.token)

    return ConnectionSupervisor(
        profile,
        client_factory=factory,
        epoch_store=MemoryEpochStore(),
        clock=AsyncioClock(),
        token=gw.token,
    )


def replies(conv: Conversation) -> list[str]:
    return [m.text for m in conv.messages if m.role is Role.ASSISTANT]


async def test_drop_mid_turn_then_reactivate_ends_with_the_full_reply_once(
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer(reply=REPLY, chunk_delay=0.03) as provider:
        async with hermes_gateway(tmp_path / "home", provider.base_url) as gw:
            sup = make_supervisor(gw)
            router = SessionRouter(sup)
            try:
                await start_online(sup, router)
                stored = await router.create(title="drop test")
                conv = router.conversation(stored)
                assert conv is not None
                seen: list[str] = []
                conv.add_listener(
                    lambda c: seen.append(c.streaming_message.text) if c.streaming_message else None
                )
                runtime = router.runtime_id(stored)
                result = await sup.call("prompt.submit", {"session_id": runtime, "text": "talk"})
                assert result.get("status") in {"streaming", "queued"}
                await condition(conv, lambda: len(seen) > 0 and len(seen[-1]) >= 80, "deltas")
                assert conv.running and len(seen[-1]) < len(REPLY)  # really mid-turn
                first_epoch = sup.epoch
                sup.network_changed()  # the socket is dropped mid-turn
                await condition(
                    conv,
                    lambda: sup.epoch > first_epoch and router.synced_epoch == sup.epoch,
                    "reactivated on a new socket",
                    sup=sup,
                    router=router,
                )
                await condition(conv, lambda: not conv.running, "turn completed", timeout=90)
                assert replies(conv) == [REPLY]
                # Never doubled on screen: every intermediate text was a prefix of the answer.
                bad = [t for t in seen if not REPLY.startswith(t)]
                assert bad == []
                assert router.activations == 1
            finally:
                await router.close()
                await sup.close()


async def test_idle_session_reaped_while_detached_is_resumed(tmp_path: Path) -> None:
    with FakeOpenAIServer(reply="pong") as provider:
        async with hermes_gateway(tmp_path / "home", provider.base_url) as gw:
            sup = make_supervisor(gw)
            ids: list[tuple[str, str]] = []
            router = SessionRouter(sup, on_ids=lambda s, r: ids.append((s, r)))
            try:
                await start_online(sup, router)
                stored = await router.create(title="reap test")
                conv = router.conversation(stored)
                assert conv is not None
                old_runtime = router.runtime_id(stored)
                await sup.call("prompt.submit", {"session_id": old_runtime, "text": "ping"})
                await condition(
                    conv, lambda: replies(conv) == ["pong"] and not conv.running, "first turn"
                )
                sup.pause()  # detach: the gateway reaps the idle session after about 20 s
                await condition(None, lambda: sup.status.state is ConnectionState.PAUSED, "paused")
                probe = JsonRpcGatewayClient(gw.url, token=gw.token)
                try:
                    await probe.connect()

                    async def reaped() -> bool:
                        try:
                            await probe.call("session.history", {"session_id": old_runtime})
                        except Exception as exc:
                            return getattr(exc, "code", None) == 4001
                        return False

                    loop = asyncio.get_running_loop()
                    deadline = loop.time() + 90
                    while not await reaped():
                        assert loop.time() < deadline, "session was never reaped"
                        await asyncio.sleep(1.0)  # polling the gateway's own reaper, bounded
                finally:
                    await probe.close()
                sup.resume()
                await condition(
                    conv,
                    lambda: (
                        router.runtime_id(stored) not in (None, old_runtime)
                        and router.synced_epoch == sup.epoch
                    ),
                    "resumed under a new runtime id",
                    sup=sup,
                    router=router,
                )
                assert ids[-1] == (stored, router.runtime_id(stored))
                assert [m.text for m in conv.messages] == ["ping", "pong"]
            finally:
                await router.close()
                await sup.close()
