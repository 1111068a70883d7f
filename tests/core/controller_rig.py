"""A ProfileController over a scripted gateway, real SQLite store and the fake clock.

`async with rig(tmp_path) as r:` gives the controller and what it is built from (store, outbox,
router, port, drafts); `r.seen` records every listener call, `r.gw` scripts the gateway's
answers and `r.emit` pushes a gateway event. Faults go in through `r.net.handler` (answers)
and the store's public methods.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from desktop.common.clock import ManualClock
from desktop.core.chats.router import SessionRouter
from desktop.core.delivery.outbox import Outbox
from desktop.core.delivery.port import SupervisorPort
from desktop.core.disk.drafts import DraftKeeper
from desktop.core.disk.store import Store
from desktop.core.errors import RpcError
from desktop.core.link.epochs import MemoryEpochStore
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.models import ChatMessage, Role, SessionSummary
from desktop.core.profile.assembly import SharedParts, assemble_profile
from desktop.core.profile.controller import ProfileController
from tests.core.supervisor_fakes import FakeCaps, FakeNet, until

PROFILE = Profile(id="p", name="P", kind=ProfileKind.REMOTE, url="ws://127.0.0.1:9/api/ws")


@dataclass
class Caps(FakeCaps):
    submission_ref: bool = True
    history_window: bool = True  # like the embedded gateway: marks are row positions
    raw: dict[str, Any] = field(default_factory=dict)


class Gateway:
    """Scripted gateway state behind FakeNet.handler: sessions, prompts, the session list."""

    def __init__(self, net: FakeNet) -> None:
        self.net = net
        self.runtime_of: dict[str, str] = {}  # stored id -> runtime id
        self.listing: list[dict[str, Any]] = []
        self.submit_error: RpcError | None = None
        self.reaped: set[str] = set()  # runtime ids the gateway forgot (4001)
        self.runs_turns = False  # True: each accepted prompt runs a turn ("ok") right after
        net.handler = self.handle

    def _run_turn(self, runtime_id: str) -> None:
        if self.net.clients and self.net.clients[-1].connected:
            client = self.net.clients[-1]
            client.emit("message.start", runtime_id)
            client.emit("message.complete", runtime_id, text="ok", status="complete")

    def calls(self, method: str) -> list[dict[str, Any]]:
        return [p for m, p in self.net.calls if m == method]

    def handle(self, method: str, params: dict[str, Any]) -> Any:
        sid = params.get("session_id", "")
        if sid in self.reaped and method in ("session.activate", "prompt.submit"):
            return RpcError(4001, "session not found", method=method)
        if method == "session.create":
            n = len(self.calls("session.create"))
            self.runtime_of[f"s{n}"] = f"r{n}"
            return {"session_id": f"r{n}", "stored_session_id": f"s{n}", "messages": []}
        if method in ("session.activate", "session.resume"):
            runtime = self.runtime_of.get(sid, sid)
            return {"session_id": runtime, "messages": [], "running": False}
        if method == "prompt.submit":
            if self.submit_error is None and self.runs_turns:
                # As a gateway does: the turn runs after the answer and ends (a follow-up the
                # outbox holds meanwhile goes out then).
                asyncio.get_running_loop().call_soon(self._run_turn, sid)
            return self.submit_error or {"ok": True}
        if method == "session.list":
            return {"sessions": self.listing}
        if method in ("session.title", "session.delete", "session.interrupt", "session.close"):
            return {}
        if method.endswith(".respond"):
            return {}
        return RpcError(-32601, "method not found", method=method)


class Recorder:
    """A listener that records every callback it gets."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Callable[..., None]:
        if not name.startswith("on_"):
            raise AttributeError(name)
        return lambda *args: self.calls.append((name, args))

    def of(self, name: str) -> list[tuple[Any, ...]]:
        return [args for n, args in self.calls if n == name]


@dataclass
class Rig:
    ctl: ProfileController
    gw: Gateway
    net: FakeNet
    store: Store
    outbox: Outbox
    port: SupervisorPort
    router: SessionRouter
    drafts: DraftKeeper
    seen: Recorder
    clock: ManualClock

    async def online(self) -> None:
        self.ctl.start()
        await settle(self.port.is_online, "online and synced")

    def attached(self, key: str) -> bool:
        """Whether session `key` is followed and its snapshot taken (nothing in flight)."""
        routed = self.router.session(key)
        return routed is not None and not routed.history_stale and not routed.pending

    def summary(self, key: str) -> SessionSummary:
        return next(s for s in self.ctl.sessions() if s.key == key)

    def emit(self, type_: str, runtime_id: str, **payload: Any) -> None:
        self.net.clients[-1].emit(type_, runtime_id, **payload)


async def settle(predicate: Callable[[], bool], what: str) -> None:
    await until(predicate, what, rounds=2000)


@asynccontextmanager
async def rig(tmp_path: Path, *, seed: Callable[[Store], None] | None = None) -> AsyncIterator[Rig]:
    clock = ManualClock()
    store = Store(str(tmp_path / "hermes-qt.sqlite3"))
    if seed is not None:
        seed(store)
    net = FakeNet(caps=Caps())
    gw = Gateway(net)
    shared = SharedParts.over(store, tmp_path, clock=clock, epochs=MemoryEpochStore())
    p = assemble_profile(PROFILE, shared, clients=net.factory, random=lambda: 0.0)
    seen = Recorder()
    p.controller.subscribe(seen)
    try:
        yield Rig(
            p.controller,
            gw,
            net,
            store,
            shared.outbox,
            p.port,
            p.router,
            shared.drafts,
            seen,
            clock,
        )
    finally:
        await p.controller.close()
        await shared.aclose()


def user_bubbles(messages: list[ChatMessage]) -> list[ChatMessage]:
    return [m for m in messages if m.role is Role.USER]


def one_chat(store: Store) -> None:
    """Seed: chat s1, known to the gateway as r1."""
    store.upsert_session("p", "s1", runtime_id="r1", title="Chat")


def two_chats(store: Store) -> None:
    """Seed: chats s1 (newer) and s2, known to the gateway as r1 and r2."""
    store.upsert_session("p", "s1", runtime_id="r1", title="One", updated_at=2.0)
    store.upsert_session("p", "s2", runtime_id="r2", title="Two", updated_at=1.0)
