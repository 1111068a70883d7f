"""The real client stack over real sockets through the fault proxy, wired to a History.

ConnectionSupervisor + JsonRpcGatewayClient + SessionRouter + Outbox + Store, against the
embedded gateway (in-process, or any URL). Every transport is counted per profile and can
filter inbound frames; every submit, outcome, epoch and socket death lands in `rig.history`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from desktop.common.clock import AsyncioClock, Clock
from desktop.common.limits import MAX_FRAME_BYTES
from desktop.common.retry import RetrySchedule
from desktop.core.delivery.outbox import Outbox
from desktop.core.disk.drafts import DraftKeeper
from desktop.core.disk.store import OutboxEntry, Store
from desktop.core.link.client import JsonRpcGatewayClient
from desktop.core.link.epochs import FileEpochStore
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.link.supervisor import Endpoint
from desktop.core.link.transport import Transport, open_websocket
from desktop.core.models import ConnectionState, ConnectionStatus, DeliveryState, Role
from desktop.core.profile.assembly import link_profile
from desktop.core.profile.composer_drafts import ComposerDrafts
from desktop.gateway.providers.base import Provider
from desktop.gateway.rpc.server import GatewayConfig, GatewayServer
from tests.reliability.history import History, Outcome
from tests.reliability.providers import ScriptedProvider
from tests.support.fault_proxy import FaultProxy, port_of

TOKEN = "reliability-token-0123456789"
PING_MARK = '"gateway.ping"'
SUBMIT_MARK = '"prompt.submit"'
READY_MARK = '"gateway.ready"'
# Inbound frame filter: returns the frames to hand to the client instead (drop, dup, inject).
Filter = Callable[[str | bytes], list[str | bytes]]
# Called synchronously as heartbeat traffic passes: "ping" as one leaves, "pong" as its answer
# arrives (app or WebSocket pong), "ready" and "frame" for other inbound frames.
WireHook = Callable[[str], None]


async def until(predicate: Callable[[], bool], what: str, timeout: float = 20.0) -> float:
    """Wait for a condition (checked every 10 ms) within a deadline; returns the time it held."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for: {what}")
        await asyncio.sleep(0.01)
    return time.monotonic()


class CountedTransport:
    """A real transport that reports its close to the ledger and filters inbound frames."""

    def __init__(self, inner: Transport, on_close: Callable[[], None], rig: Rig) -> None:
        self._inner = inner
        self._on_close = on_close
        self._rig = rig
        self._queued: list[str | bytes] = []
        self._closed = False
        self._pings: set[Any] = set()  # ids of gateway.ping calls not answered yet
        self._submits: dict[Any, str] = {}  # prompt.submit ids not answered yet -> ref or text

    @property
    def local_open(self) -> bool:
        return self._inner.local_open

    @property
    def bytes_received(self) -> int:
        return self._inner.bytes_received

    async def send(self, text: str) -> None:
        self._rig.sent.append(text)
        if SUBMIT_MARK in text:
            msg = json.loads(text)
            params = msg.get("params") or {}
            key = params.get("submission_ref") or params.get("text", "")
            self._submits[msg["id"]] = key
            self._rig.history.wire_event(key, "send")
        if PING_MARK in text:
            self._pings.add(json.loads(text)["id"])
            self._rig.on_wire("ping")
        await self._inner.send(text)

    async def recv(self) -> str | bytes:
        while not self._queued:
            frame = await self._inner.recv()
            flt = self._rig.inbound_filter
            self._queued.extend(flt(frame) if flt is not None else [frame])
        frame = self._queued.pop(0)
        self._rig.on_wire(self._wire_kind(frame))
        if self._submits and isinstance(frame, str) and '"method"' not in frame:
            self._on_submit_answer(frame)
        return frame

    def _on_submit_answer(self, frame: str) -> None:
        with contextlib.suppress(ValueError, TypeError, KeyError):
            msg = json.loads(frame)
            key = self._submits.pop(msg["id"], None)
            if key is not None:
                self._rig.history.wire_event(key, "ok" if "result" in msg else "error")

    def _wire_kind(self, frame: str | bytes) -> str:
        if isinstance(frame, str) and READY_MARK in frame:
            return "ready"
        if self._pings and isinstance(frame, str) and '"result"' in frame:
            with contextlib.suppress(ValueError, TypeError, KeyError):
                reply_id = json.loads(frame)["id"]
                if reply_id in self._pings:
                    self._pings.discard(reply_id)
                    return "pong"
        return "frame"

    async def ping(self) -> float:
        self._rig.protocol_pings += 1
        self._rig.on_wire("ping")
        rtt = await self._inner.ping()
        self._rig.on_wire("pong")
        return rtt

    def abort(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                abort = getattr(self._inner, "abort", None)
                if abort is not None:
                    abort()
            finally:
                self._on_close()

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                await self._inner.close()
            finally:
                self._on_close()


@dataclass
class Death:
    """One socket generation's death as the client saw it."""

    at: float
    last_inbound: float | None
    reason: str
    code: int | None
    generation: int
    # The rig's own time.monotonic() of the last inbound frame or pong (the client's clock
    # may be coarse or scaled).
    wire_inbound: float = 0.0


@dataclass
class RigOptions:
    interval: float = 0.3
    deadline: float = 1.0
    call_timeout: float = 3.0
    connect_timeout: float = 2.0
    max_frame: int = 1024 * 1024
    token: str = TOKEN
    profile_id: str = "p1"
    sup_clock: Clock = field(default_factory=AsyncioClock)
    random: Callable[[], float] = lambda: 0.0
    # The embedded gateway in-process (None: connect to `url` instead).
    words: int = 8
    word_interval: float = 0.0
    provider: Provider | None = None
    server_deadline: float = 1.0
    server_max_frame: int = MAX_FRAME_BYTES
    allow_insecure: bool = False  # plain ws:// to a non-loopback address (netns tests only)
    client_clock: Clock | None = None  # the gateway client's clock (None: the real one)


class Rig:
    """See the module docstring. Build with `async with rig(tmp_path) as r:`."""

    def __init__(self, tmp: Path, options: RigOptions) -> None:
        self.tmp = tmp
        self.opt = options
        self.history = History()
        self.sent: list[str] = []
        self.protocol_pings = 0
        self.inbound_filter: Filter | None = None
        self.wire_hook: WireHook | None = None
        self.ready_at = 0.0  # time.monotonic() of the newest socket's gateway.ready
        self.wire_inbound_at = 0.0  # ... and of the last inbound frame or pong
        self.deaths: list[Death] = []
        self.clients: list[JsonRpcGatewayClient] = []
        self.statuses: list[ConnectionStatus] = []
        self.restored: list[str] = []
        self.gone: list[str] = []
        self.dedupe = False  # the gateway de-duplicates submission_ref (seen when online)
        self.gateway: GatewayServer | None = None
        self.proxy: FaultProxy | None = None
        self.url = ""
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- gateway and proxy ------------------------------------------------------------------

    async def start_gateway(self, data_dir: Path | None = None) -> GatewayServer:
        provider = self.opt.provider or ScriptedProvider(
            words=self.opt.words, interval=self.opt.word_interval
        )
        cfg = GatewayConfig(
            data_dir=data_dir or self.tmp / "gateway",
            token=TOKEN,
            ping_interval=None,
            debug=True,
            coalesce_interval=0.005,
            heartbeat_deadline=self.opt.server_deadline,
            max_frame=self.opt.server_max_frame,
        )
        self.gateway = GatewayServer(cfg, provider)
        await self.gateway.start()
        return self.gateway

    @property
    def gateway_port(self) -> int:
        assert self.gateway is not None
        return port_of(self.gateway.url)

    def served(self, db: Path | None = None) -> Counter[str]:
        """How many times the gateway ran each prompt text (its own user rows)."""
        path = db or self.tmp / "gateway" / "gateway.sqlite3"
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = conn.execute(
                "SELECT text, COUNT(*) FROM messages WHERE role = 'user' GROUP BY text"
            ).fetchall()
        finally:
            conn.close()
        return Counter({text: n for text, n in rows})

    def restore_network(self) -> None:
        """The network comes back: packets held in the blackhole were lost, not delayed."""
        assert self.proxy is not None
        self.proxy.set_mode("reset")
        self.proxy.set_mode("pass")

    def on_wire(self, kind: str) -> None:
        now = time.monotonic()
        if kind != "ping":
            self.wire_inbound_at = now
        if kind == "ready":
            self.ready_at = now
        hook = self.wire_hook
        if hook is not None:
            hook(kind)

    # -- the client stack -------------------------------------------------------------------

    def _transport_factory(self, profile_id: str) -> Any:
        ledger = self.history.sockets

        async def factory(url: str, **kwargs: Any) -> Transport:
            inner = await open_websocket(url, **kwargs)
            ledger.open(profile_id)
            return CountedTransport(inner, lambda: ledger.close(profile_id), self)

        return factory

    def client_factory(self, endpoint: Endpoint) -> JsonRpcGatewayClient:
        o = self.opt
        client = JsonRpcGatewayClient(
            endpoint.url,
            token=endpoint.token,
            allow_insecure=endpoint.allow_insecure,
            heartbeat_interval=o.interval,
            heartbeat_deadline=o.deadline,
            call_timeout=o.call_timeout,
            connect_timeout=o.connect_timeout,
            max_frame_size=o.max_frame,
            transport_factory=self._transport_factory(o.profile_id),
            clock=o.client_clock,
        )

        def on_closed(reason: str, code: int | None, generation: int) -> None:
            self.deaths.append(
                Death(
                    time.monotonic(),
                    client.last_inbound_at,
                    reason,
                    code,
                    generation,
                    self.wire_inbound_at,
                )
            )

        client.on_closed(on_closed)
        self.clients.append(client)
        return client

    def build(self, url: str) -> None:
        o = self.opt
        self.url = url
        self.tmp.mkdir(parents=True, exist_ok=True)
        profile = Profile(
            id=o.profile_id,
            name="test",
            kind=ProfileKind.REMOTE,
            url=url,
            allow_insecure=o.allow_insecure,
        )
        self.store = Store(self.tmp / f"client-{o.profile_id}.sqlite3")
        # The app's own wiring below the controller; this rig drives the outbox itself.
        link = link_profile(
            profile,
            clients=self.client_factory,
            store=self.store,
            epochs=FileEpochStore(self.tmp / f"epochs-{o.profile_id}.json"),
            clock=o.sup_clock,
            random=o.random,
            token=o.token,
            on_gone=self._on_gone,
        )
        self.sup, self.router, self.port = link.supervisor, link.router, link.port
        self.outbox = Outbox(
            self.store,
            {o.profile_id: self.port}.get,
            AsyncioClock(),
            call_timeout=o.call_timeout,
            retry=RetrySchedule(0.1, 1.0),
        )
        # The app's own composer drafts: a prompt given back lands where the user sees it.
        self.drafts = DraftKeeper(self.store, AsyncioClock())
        self.composer = ComposerDrafts(o.profile_id, self.drafts, self.store, lambda *a: None)
        self.outbox.on_state(self._on_entry_state)
        self.outbox.on_removed(self._on_entry_removed)
        self.outbox.on_restore(self._on_restore)
        self.sup.add_status_listener(self._on_status)

    def _on_gone(self, stored: str, reason: str) -> None:
        self.gone.append(stored)

    def _on_status(self, status: ConnectionStatus) -> None:
        self.statuses.append(status)
        if status.state is ConnectionState.CONNECTING:
            self.history.epoch_started(status.epoch)
        elif status.state is ConnectionState.ONLINE:
            caps = self.sup.dialect
            if caps is not None:
                self.dedupe = bool(caps.submission_ref)
            self._spawn(self._after_online(status.epoch))

    async def _after_online(self, epoch: int) -> None:
        # Let the router reattach its sessions first, then drain the outbox and settle
        # ambiguous prompts against the session's own state.
        with contextlib.suppress(AssertionError):
            await until(
                lambda: self.router.synced_epoch >= epoch or self.sup.epoch != epoch,
                "router synced",
                30,
            )
        if self.sup.epoch != epoch:
            return
        self.outbox.on_online(self.opt.profile_id)
        caps = self.sup.dialect
        if caps is not None and not caps.submission_ref:
            for key in self.outbox.unconfirmed_sessions(self.opt.profile_id):
                if self.router.runtime_id(key):
                    with contextlib.suppress(Exception):
                        await self.outbox.reconcile_via(self.opt.profile_id, key)

    def _on_entry_state(self, entry: OutboxEntry) -> None:
        if entry.state is DeliveryState.UNCONFIRMED:
            self.history.ambiguous(entry.submission_ref)

    def _on_entry_removed(self, entry: OutboxEntry) -> None:
        if entry.state is DeliveryState.CONFIRMED:
            outcome = Outcome.CONFIRMED
        elif entry.state is DeliveryState.FAILED:
            outcome = Outcome.RESTORED if entry.text in self.restored else Outcome.FAILED
        else:
            return  # cancelled by the user
        self.history.complete(
            entry.submission_ref, outcome, epoch=self.sup.epoch, error=entry.error
        )

    def _on_restore(self, entry: OutboxEntry) -> bool:
        restored = self.composer.on_outbox_restore(entry)
        if restored:
            self.restored.append(entry.text)
        return restored

    def composer_text(self, session_key: str) -> str:
        """What the composer shows for a session (its draft, as the app loads it)."""
        draft = self.composer.load(session_key)
        return draft.text if draft is not None else ""

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- scenario helpers -------------------------------------------------------------------

    @property
    def online(self) -> bool:
        return (
            self.sup.status.state is ConnectionState.ONLINE
            and self.router.synced_epoch == self.sup.epoch
        )

    async def wait_online(self, timeout: float = 20.0, *, after: int = 0) -> float:
        """Wait until ONLINE (in an epoch above `after`) with every session reattached."""
        return await until(
            lambda: self.online and self.sup.epoch > after, "online and synced", timeout
        )

    async def create_session(self, title: str = "reliability") -> str:
        key = await self.router.create(title=title)
        runtime = self.router.runtime_id(key)
        assert runtime
        self.store.upsert_session(self.opt.profile_id, key, runtime_id=runtime)
        return key

    def submit(self, key: str, text: str) -> OutboxEntry:
        conv = self.router.conversation(key)
        count = len(conv.messages) if conv is not None else 0
        runtime = self.router.runtime_id(key) or ""
        client = self.sup.client
        entry = self.outbox.submit(self.opt.profile_id, key, runtime, text, history_len=count)
        self.history.invoke(
            entry.submission_ref,
            text,
            key,
            epoch=self.sup.epoch,
            generation=client.generation if client is not None else 0,
        )
        return entry

    def replies(self, key: str) -> list[str]:
        conv = self.router.conversation(key)
        assert conv is not None
        return [m.text for m in conv.messages if m.role is Role.ASSISTANT and not m.streaming]

    def untimed_replies(self, key: str) -> int:
        """Replies of the chat shown without a time (each bubble shows when it was written;
        a prompt's is its local bubble's, which the window adds, not the rig)."""
        conv = self.router.conversation(key)
        assert conv is not None
        return sum(m.created_at <= 0 for m in conv.messages if m.role is Role.ASSISTANT)

    async def wait_reply(self, key: str, text: str, timeout: float = 20.0) -> float:
        return await until(lambda: text in self.replies(key), f"reply {text[:40]!r}", timeout)

    async def settled(self, timeout: float = 20.0) -> None:
        await until(
            lambda: all(op.outcome is not None for op in self.history.ops.values()),
            "every submit resolved",
            timeout,
        )
        # A submit confirmed as "queued" reaches the gateway's history only when its turn
        # starts: let queued turns start before the checker counts runs. A real violation
        # (a duplicate, a lost prompt) does not go away by waiting and is still reported.
        if self.gateway is not None:
            with contextlib.suppress(AssertionError):
                await until(lambda: not self.problems(), "queued turns started", 10)

    def problems(self, served: Counter[str] | None = None) -> list[str]:
        return self.history.check(
            served if served is not None else self.served(),
            composer=self.composer_text,
            dedupe=self.dedupe,
        )

    def reconnects(self) -> int:
        """Successful connects after the first."""
        return max(0, sum(s.state is ConnectionState.ONLINE for s in self.statuses) - 1)

    async def aclose(self) -> None:
        if hasattr(self, "outbox"):
            await self.outbox.aclose()
            await self.router.close()
            await self.sup.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self.composer.close()
            self.drafts.close()
            self.store.close()
        if self.proxy is not None:
            self.proxy.stop()
        if self.gateway is not None:
            await self.gateway.stop()


@contextlib.asynccontextmanager
async def rig(
    tmp: Path, *, gateway: bool = True, url: str | None = None, start: bool = True, **options: Any
) -> AsyncIterator[Rig]:
    """The stack against the in-process embedded gateway behind a fault proxy (or `url`)."""
    r = Rig(tmp, RigOptions(**options))
    try:
        if gateway:
            await r.start_gateway()
            r.proxy = FaultProxy(r.gateway_port).start()
            url = f"ws://127.0.0.1:{r.proxy.port}/api/ws"
        assert url is not None
        r.build(url)
        if start:
            r.sup.start()
        yield r
    finally:
        await r.aclose()
