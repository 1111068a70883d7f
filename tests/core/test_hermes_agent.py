"""The agent, not just the chat, against real Hermes 0.19.0, 0.20.1 (and 0.22.2 where the wire
allows it) with a scripted provider.

Each test drives the profile controller (what the window talks to) over a fault proxy to a real
`hermes serve` / `hermesx serve`: a streamed `terminal` tool call Hermes flags for approval, the
`clarify` tool with choices, reasoning deltas; and the same requests emitted while the client is
cut off. Every reply must complete exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import stat
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from desktop.common.clock import AsyncioClock
from desktop.core.chats.conversation import Conversation
from desktop.core.chats.router import SessionRouter
from desktop.core.disk.store import Store
from desktop.core.link.client import JsonRpcGatewayClient
from desktop.core.link.epochs import MemoryEpochStore
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.link.supervisor import ConnectionSupervisor
from desktop.core.models import ApprovalRequest, ConnectionState, ModelChoice, Role
from desktop.core.profile.assembly import SharedParts, assemble_profile, gateway_clients
from desktop.core.profile.controller import ProfileController
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.fault_proxy import FaultProxy, proxy_to
from tests.support.hermes_env import (
    HERMES_019,
    HERMES_0201,
    HERMES_022,
    HermesDist,
    HermesGateway,
    hermes_gateway,
)
from tests.support.hermes_env import require_hermes as _require
from tests.support.waiting import wait_notified

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(240)]

# Approvals and clarify: 0.19 and 0.20.1 here; 0.22 asks them as server->client requests.
DISTS = [pytest.param(HERMES_019, id="0.19.0"), pytest.param(HERMES_0201, id="0.20.1")]
# What every line's wire allows (0.22.2 included).
ALL_LINES = [*DISTS, pytest.param(HERMES_022, id="0.22.2")]
DONE = "Permissions changed."
# 0.19 times an unanswered approval out after approvals.timeout (60 s by default).
SHORT_APPROVAL_TIMEOUT = "approvals:\n  timeout: 8\n"


class Recorder:
    """A controller listener that records every callback and wakes waiters."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self._listeners: list[Callable[..., None]] = []

    def __getattr__(self, name: str) -> Callable[..., None]:
        if not name.startswith("on_"):
            raise AttributeError(name)

        def record(*args: Any) -> None:
            self.calls.append((name, args))
            for listener in list(self._listeners):
                listener()

        return record

    def subscribe(self, listener: Callable[..., None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def of(self, name: str) -> list[tuple[Any, ...]]:
        return [args for n, args in self.calls if n == name]

    def requests(self) -> list[ApprovalRequest]:
        return [args[1] for args in self.of("on_approval_request")]


@dataclass
class Agent:
    ctl: ProfileController
    sup: ConnectionSupervisor
    router: SessionRouter
    fake: FakeOpenAIServer
    proxy: FaultProxy
    seen: Recorder
    gateway_url: str
    token: str
    scratch: Path
    gateway: HermesGateway

    async def until(self, predicate: Callable[[], bool], what: str, timeout: float = 90) -> None:
        subs = [self.seen.subscribe, self.sup.add_status_listener, self.router.on_synced]
        await wait_notified(predicate, subs, what, timeout)

    async def start_chat(self, text: str) -> str:
        """A new chat with `text` sent, as the window does it; returns its durable key."""
        temp = self.ctl.create_session()
        self.ctl.send(temp, text, ())
        await self.until(lambda: bool(self.seen.of("on_session_key_changed")), "created")
        return str(self.seen.of("on_session_key_changed")[-1][1])

    def conv(self, key: str) -> Conversation:
        conv = self.router.conversation(key)
        assert conv is not None
        return conv

    def replies(self, key: str) -> list[str]:
        return [m.text for m in self.conv(key).messages if m.role is Role.ASSISTANT]

    async def completed(self, key: str, what: str) -> None:
        conv = self.conv(key)
        await self.until(lambda: not conv.running and any(self.replies(key)), what, 120)

    async def card(self, kind: str, what: str) -> ApprovalRequest:
        await self.until(lambda: any(r.kind == kind for r in self.seen.requests()), what)
        return next(r for r in self.seen.requests() if r.kind == kind)

    async def cut(self) -> None:
        """The network goes: every connection is reset and new ones too (the app keeps trying)."""
        self.proxy.set_mode("reset")
        await self.until(lambda: self.sup.status.state is not ConnectionState.ONLINE, "offline")

    async def restore(self) -> None:
        epoch = self.sup.epoch
        self.proxy.set_mode("pass")
        self.sup.reconnect_now()
        await self.until(
            lambda: self.sup.epoch > epoch and self.router.synced_epoch == self.sup.epoch,
            "reconnected and reattached",
        )

    async def restart_gateway(self) -> None:
        """The gateway process dies and a new one starts on the same HERMES_HOME (a new port,
        the same token); the client finds it through the proxy and reattaches its chats."""
        epoch = self.sup.epoch
        assert self.gateway.pid is not None
        os.killpg(self.gateway.pid, signal.SIGKILL)
        await self.until(lambda: self.sup.status.state is not ConnectionState.ONLINE, "death")
        await self.gateway.launcher.wait_exit()
        endpoint = await self.gateway.launcher.endpoint()
        port = urlsplit(endpoint.url).port
        assert port is not None
        self.proxy.target_port = port
        self.sup.reconnect_now()
        await self.until(
            lambda: self.sup.epoch > epoch and self.router.synced_epoch == self.sup.epoch,
            "reconnected to the new gateway and reattached",
            120,
        )

    async def gateway_waits(self, key: str, check: str) -> None:
        """Poll the gateway on a side socket until the agent blocks on the user (`check`)."""
        runtime = self.router.runtime_id(key)
        probe = JsonRpcGatewayClient(self.gateway_url, token=self.token)
        await probe.connect()
        try:
            async with asyncio.timeout(90):
                while True:
                    if check == "approval":
                        res = await probe.call("approval.pending", {"session_id": runtime})
                        if res.get("approvals"):
                            return
                    else:
                        res = await probe.call("session.active_list", {})
                        rows = [s for s in res.get("sessions", []) if s.get("id") == runtime]
                        if rows and rows[0].get("status") == check:
                            return
                    await asyncio.sleep(0.25)  # the gateway has no event for this: bounded poll
        finally:
            await probe.close()


@contextlib.asynccontextmanager
async def agent(tmp: Path, dist: HermesDist, *, config_extra: str = "") -> AsyncIterator[Agent]:
    _require(dist)
    scratch = tmp / "scratch.txt"
    scratch.write_text("not shared\n")
    scratch.chmod(0o644)
    with FakeOpenAIServer(reply="ok") as fake:
        fake.side_reply = "UNSURE"  # 0.19 smart approvals: neither APPROVE nor DENY -> the card
        async with hermes_gateway(
            tmp / "home", fake.base_url, dist, config_extra=config_extra
        ) as gw:
            with proxy_to(gw.url) as (proxy, url):
                clock = AsyncioClock()
                store = Store(str(tmp / "hermes-qt.sqlite3"))
                profile = Profile(id="p", name="Hermes", kind=ProfileKind.REMOTE, url=url)
                shared = SharedParts.over(store, tmp, clock=clock, epochs=MemoryEpochStore())
                p = assemble_profile(
                    profile, shared, clients=gateway_clients(profile, clock), token=gw.token
                )
                seen = Recorder()
                p.controller.subscribe(seen)
                a = Agent(
                    p.controller,
                    p.supervisor,
                    p.router,
                    fake,
                    proxy,
                    seen,
                    gw.url,
                    gw.token,
                    scratch,
                    gw,
                )
                try:
                    p.controller.start()
                    await a.until(p.port.is_online, "online", 60)
                    yield a
                finally:
                    await p.controller.close()
                    await shared.aclose()


def chmod_turn(scratch: Path, gate: threading.Event | None = None) -> list[dict[str, Any]]:
    first: dict[str, Any] = {
        "reasoning": "Let me fix perms",
        "tool_calls": [("terminal", {"command": f"chmod 777 {scratch}"})],
    }
    if gate is not None:
        first["gate"] = gate
    return [first, {"content": DONE}]


def clarify_turn(gate: threading.Event | None = None) -> list[dict[str, Any]]:
    first: dict[str, Any] = {
        "reasoning": "Which one?",
        "tool_calls": [("clarify", {"question": "Which env?", "choices": ["staging", "prod"]})],
    }
    if gate is not None:
        first["gate"] = gate
    return [first, {"content": "Deploying to the chosen env."}]


def suggested(card: ApprovalRequest) -> list[str]:
    # 0.20.1 marks its first choice " (Recommended)".
    return [c.removesuffix(" (Recommended)") for c in card.choices]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def answered_with(fake: FakeOpenAIServer, text: str) -> bool:
    """The provider saw `text` in a tool result of the follow-up request."""
    last = fake.requests[-1].get("messages") or []
    return any(m.get("role") == "tool" and text in str(m.get("content")) for m in last)


@pytest.mark.parametrize("dist", DISTS)
async def test_approval_tool_row_and_reasoning_while_connected(
    tmp_path: Path, dist: HermesDist
) -> None:
    async with agent(tmp_path, dist) as a:
        a.fake.script = chmod_turn(a.scratch)
        key = await a.start_chat("make the scratch file shared")
        card = await a.card("approval", "approval card")
        assert card.title.startswith("chmod 777") and "writable" in card.detail
        assert set(card.choices) == {"once", "session", "always", "deny"}
        assert mode(a.scratch) == 0o644  # nothing ran before the answer
        a.ctl.respond(key, card.request_id, "once")
        await a.completed(key, "turn completed")
        assert a.replies(key) == [DONE]  # exactly one reply bubble, complete
        [reply] = [m for m in a.conv(key).messages if m.role is Role.ASSISTANT]
        assert [(t.name, t.done) for t in reply.tools] == [("terminal", True)]
        assert reply.thinking == "Let me fix perms"  # reasoning, not the spinner text
        assert reply.usage.get("context_max") == 131072 and reply.usage.get("output")
        assert a.conv(key).status_text == "" and a.conv(key).pending == {}
        infos = [args[1] for args in a.seen.of("on_session_info") if args[0] == key]
        assert any(i.activity for i in infos)  # Hermes' spinner text reached the status line
        assert (infos[-1].model, infos[-1].provider, infos[-1].activity) == (
            "fake-model",
            "custom",
            "",
        )
        assert mode(a.scratch) == 0o777  # approving really ran the command
        assert [rid for _, rid in a.seen.of("on_approval_closed")] == [card.request_id]


@pytest.mark.parametrize("dist", DISTS)
async def test_clarify_with_choices_while_connected(tmp_path: Path, dist: HermesDist) -> None:
    async with agent(tmp_path, dist) as a:
        a.fake.script = clarify_turn()
        key = await a.start_chat("deploy it")
        card = await a.card("clarify", "clarify card")
        assert card.title == "Which env?" and suggested(card) == ["staging", "prod"]
        a.ctl.respond(key, card.request_id, "staging")
        await a.completed(key, "turn completed")
        assert a.replies(key) == ["Deploying to the chosen env."]
        assert answered_with(a.fake, "staging")


@pytest.mark.parametrize("dist", DISTS)
async def test_approval_emitted_while_disconnected(tmp_path: Path, dist: HermesDist) -> None:
    async with agent(tmp_path, dist, config_extra=SHORT_APPROVAL_TIMEOUT) as a:
        gate = threading.Event()
        a.fake.script = chmod_turn(a.scratch, gate)
        key = await a.start_chat("make the scratch file shared")
        await asyncio.to_thread(a.fake.wait_until, lambda f: bool(f.script) and len(f.script) < 2)
        await a.cut()
        gate.set()  # the tool call streams now: Hermes asks for approval with nobody attached
        if dist is HERMES_0201:
            await a.gateway_waits(key, "approval")
        else:
            # 0.19 shows no sign of an open approval ("working" throughout): to be sure it was
            # asked while offline, stay away until Hermes timed it out and the turn ended.
            await a.gateway_waits(key, "idle")
        await a.restore()
        if dist is HERMES_0201:
            # 0.20.1 puts the request in the activate snapshot: the card is back.
            card = await a.card("approval", "approval card after the reconnect")
            assert card.title.startswith("chmod 777")
            a.ctl.respond(key, card.request_id, "once")
            await a.completed(key, "turn completed")
            assert a.replies(key) == [DONE]
            assert mode(a.scratch) == 0o777
        else:
            # 0.19 says only "working" and never sends the request again: no card can be
            # shown; Hermes timed the approval out and the turn still shows exactly once.
            await a.completed(key, "the reply rebuilt from the snapshot")
            assert a.seen.requests() == []
            assert a.replies(key) == [DONE] and mode(a.scratch) == 0o644


@pytest.mark.parametrize("dist", DISTS)
async def test_clarify_emitted_while_disconnected(tmp_path: Path, dist: HermesDist) -> None:
    async with agent(tmp_path, dist) as a:
        gate = threading.Event()
        a.fake.script = clarify_turn(gate)
        key = await a.start_chat("deploy it")
        await asyncio.to_thread(a.fake.wait_until, lambda f: bool(f.script) and len(f.script) < 2)
        await a.cut()
        gate.set()
        await a.gateway_waits(key, "waiting")
        await a.restore()
        if dist is HERMES_0201:
            card = await a.card("clarify", "clarify card after the reconnect")
            assert card.title == "Which env?" and suggested(card) == ["staging", "prod"]
            a.ctl.respond(key, card.request_id, "prod")
            await a.completed(key, "turn completed")
            assert a.replies(key) == ["Deploying to the chosen env."]
            assert answered_with(a.fake, "prod")
        else:
            # 0.19: status "waiting" but no question: the app says so and offers a way out.
            card = await a.card("waiting", "the cannot-show notice")
            assert "cannot show" in card.title
            a.ctl.respond(key, card.request_id, "stop")
            await a.until(lambda: not a.conv(key).running, "turn stopped", 60)
            assert len(a.replies(key)) <= 1 and a.conv(key).pending == {}


@pytest.mark.parametrize("dist", ALL_LINES)
async def test_tool_row_reasoning_slash_commands_and_model_switch(
    tmp_path: Path, dist: HermesDist
) -> None:
    async with agent(tmp_path, dist) as a:
        # A tool no approval policy flags, so this runs on every line (0.22 asks approvals as
        # server->client requests, tested on their own).
        a.fake.script = [
            {"reasoning": "Let me look", "tool_calls": [("terminal", {"command": "echo hi"})]},
            {"content": "hello"},
        ]
        key = await a.start_chat("hi")
        await a.completed(key, "first turn")
        [reply] = [m for m in a.conv(key).messages if m.role is Role.ASSISTANT]
        assert reply.text == "hello"
        assert [(t.name, t.done) for t in reply.tools] == [("terminal", True)]
        assert reply.thinking == "Let me look"
        assert reply.usage.get("context_max") == 131072 and reply.usage.get("output")
        a.ctl.load_commands(key)
        await a.until(lambda: bool(a.seen.of("on_commands")), "the command catalog")
        names = [name for name, _ in a.seen.of("on_commands")[-1][1]]
        assert "/status" in names and "/model" in names
        a.ctl.run_command(key, "/status")
        conv = a.conv(key)
        await a.until(
            lambda: any(m.role is Role.SYSTEM and "/status" in m.text for m in conv.messages),
            "the command's output in the chat",
        )
        assert "Hermes TUI Status" in conv.messages[-1].text
        a.ctl.load_models(key)
        await a.until(lambda: bool(a.seen.of("on_models")), "the models")
        models = a.seen.of("on_models")[-1][1]
        current = [m for m in models if m.current]
        assert [(m.provider, m.model) for m in current] == [("custom", "fake-model")]
        # A model the provider lacks: 0.19/0.20.1 answer with the model they kept and say why;
        # 0.22 switches without asking the provider. Either way the chat shows what Hermes uses.
        a.ctl.set_model(key, ModelChoice("custom", "Custom", "fake-model-2"))
        await a.until(lambda: bool(a.seen.of("on_notice")), "config.set answered")
        used = "fake-model-2" if dist is HERMES_022 else "fake-model"
        assert used in a.seen.of("on_notice")[-1][1]
        await a.until(lambda: conv.info.get("model") == used, "the model Hermes uses, shown")
