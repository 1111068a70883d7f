"""Fault-matrix rows H1-H4: a chat's earlier turns survive every reconnect on every real Hermes.

The profile controller (what the window talks to, with its Store cache) against a real
`hermes serve` of each line through the fault proxy. A chat gets two turns (the first with a
`terminal` tool call, so the gateway's raw row count is not the number of messages), then:
H2 the link is reset, H3 it is blackholed (found by the scaled liveness timer), H4 the gateway
is killed and a new one started on the same HERMES_HOME (the session is resumed by stored id),
H1 the app restarts (a new store, router and controller over the same data file) and reopens
the chat. After each, once the gateway's snapshot has landed, both turns must be on screen
(`Conversation.messages`) and in the local cache (`Store.messages`).

0.20.1 and 0.22 answer `omit_messages` with `messages: []`; 0.19 ignores it (its rows are the
control). One gateway per line serves all four rows; each row is recorded as `Hn-name@line`.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from desktop.common.clock import AsyncioClock
from desktop.core.chats.router import SessionRouter
from desktop.core.delivery.outbox import Outbox
from desktop.core.disk.drafts import DraftKeeper
from desktop.core.disk.store import Store
from desktop.core.link.epochs import MemoryEpochStore
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.link.supervisor import ConnectionSupervisor
from desktop.core.models import ConnectionState, Role
from desktop.core.profile.assembly import SharedParts, assemble_profile, gateway_clients
from desktop.core.profile.controller import ProfileController
from tests.reliability.conftest import RecordFigure
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.fault_proxy import FaultProxy
from tests.support.hermes_env import (
    HERMES_019,
    HERMES_0201,
    HERMES_0215,
    HERMES_022,
    HermesDist,
    HermesGateway,
    hermes_gateway,
    line_params,
    require_hermes,
)
from tests.support.waiting import wait_notified

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(420)]

LINES = line_params(HERMES_019, HERMES_0201, HERMES_022, HERMES_0215)
# The matrix's scaled liveness timer (production 15 s / 45 s, x45).
INTERVAL, DEADLINE = 0.3, 1.0
PROFILE_ID = "p"
TURNS = [
    (Role.USER, "list the folder please"),
    (Role.ASSISTANT, "The folder has one file."),
    (Role.USER, "and say thanks"),
    (Role.ASSISTANT, "Thanks!"),
]
Shown = list[tuple[Role, str]]


class Seen:
    """A controller listener: every callback wakes the waiters; new session keys are kept."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self._wakers: list[Callable[..., None]] = []

    def __getattr__(self, name: str) -> Callable[..., None]:
        if not name.startswith("on_"):
            raise AttributeError(name)

        def record(*args: object) -> None:
            if name == "on_session_key_changed":
                self.keys.append(str(args[1]))
            for waker in list(self._wakers):
                waker()

        return record

    def subscribe(self, waker: Callable[..., None]) -> Callable[[], None]:
        self._wakers.append(waker)
        return lambda: self._wakers.remove(waker)


@dataclass
class App:
    """One run of the app's core for one profile: what a restart throws away."""

    ctl: ProfileController
    sup: ConnectionSupervisor
    router: SessionRouter
    store: Store
    outbox: Outbox
    drafts: DraftKeeper
    snapshots: list[str]  # session keys, one per snapshot the router received
    seen: Seen
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # what was asked

    async def until(self, predicate: Callable[[], bool], what: str, timeout: float = 90) -> None:
        subs = [
            self.sup.add_status_listener,
            self.router.on_synced,
            self.router.on_snapshot,
            self.seen.subscribe,
        ]
        await wait_notified(predicate, subs, what, timeout)

    @property
    def synced(self) -> bool:
        return (
            self.sup.status.state is ConnectionState.ONLINE
            and self.router.synced_epoch == self.sup.epoch
        )

    def shown(self, key: str) -> Shown:
        conv = self.router.conversation(key)
        assert conv is not None
        return [
            (m.role, m.text)
            for m in conv.messages
            if m.role in (Role.USER, Role.ASSISTANT) and not m.streaming
        ]

    def times(self, key: str) -> list[float | None]:
        """The time each earlier bubble shows (the first four: both turns)."""
        conv = self.router.conversation(key)
        assert conv is not None
        shown = [m for m in conv.messages if m.role in (Role.USER, Role.ASSISTANT)]
        return [m.created_at for m in shown[: len(TURNS)]]

    def cached(self, key: str) -> Shown:
        rows = self.store.messages(PROFILE_ID, key)
        return [(Role(r.role), r.text) for r in rows if r.role in ("user", "assistant")]

    async def close(self) -> None:
        await self.ctl.close()
        await self.outbox.aclose()
        self.drafts.close()
        self.store.close()


def app_folders(tmp_path: Path) -> tuple[Path, Path]:
    """The app's data folder and the folder the agent works in (one file in it)."""
    data = tmp_path / "app"
    data.mkdir()
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "one.txt").write_text("1\n")
    return data, folder


def proxy_url(proxy: FaultProxy) -> str:
    """The gateway's address as the app sees it: through the fault proxy."""
    return f"ws://127.0.0.1:{proxy.port}/api/ws"


def start_app(data: Path, url: str, token: str) -> App:
    clock = AsyncioClock()
    store = Store(str(data / "hermes-qt.sqlite3"))
    profile = Profile(id=PROFILE_ID, name="Hermes", kind=ProfileKind.REMOTE, url=url)
    shared = SharedParts.over(store, data, clock=clock, epochs=MemoryEpochStore())
    clients = gateway_clients(
        profile, clock, heartbeat_interval=INTERVAL, heartbeat_deadline=DEADLINE
    )
    p = assemble_profile(profile, shared, clients=clients, token=token, random=lambda: 0.0)
    sup, router, ctl = p.supervisor, p.router, p.controller
    outbox, drafts = shared.outbox, shared.drafts
    app = App(ctl, sup, router, store, outbox, drafts, [], Seen())
    ctl.subscribe(app.seen)  # type: ignore[arg-type]
    asked = sup.call

    async def call(method: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        app.calls.append((method, dict(params or {})))
        return await asked(method, params, **kw)

    sup.call = call  # type: ignore[method-assign]
    router.on_snapshot(lambda key, _snap: app.snapshots.append(key))
    ctl.start()
    return app


@contextlib.asynccontextmanager
async def line(
    tmp: Path, dist: HermesDist
) -> AsyncIterator[tuple[FakeOpenAIServer, HermesGateway, FaultProxy]]:
    require_hermes(dist)
    with FakeOpenAIServer(reply="ok") as fake:
        fake.side_reply = "A title"  # titles and other side calls
        async with hermes_gateway(tmp / "home", fake.base_url, dist) as gw:
            proxy = FaultProxy(_port(gw.url)).start()
            try:
                yield fake, gw, proxy
            finally:
                proxy.stop()


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", maxsplit=1)[0])


async def two_turns(app: App, fake: FakeOpenAIServer, folder: Path, said_first: str = "") -> str:
    """A new chat with two complete turns, sent as the window sends them; its durable key.
    `said_first`: words the first reply says before its tool call (a row of its own)."""
    fake.script = [
        {"tool_calls": [("terminal", {"command": f"ls {folder}"})], "content": said_first},
        {"content": TURNS[1][1]},
        {"content": TURNS[3][1]},
    ]
    keys = app.seen.keys
    temp = app.ctl.create_session()
    app.ctl.send(temp, TURNS[0][1], ())
    await app.until(lambda: bool(keys), "the chat created", 120)
    key = keys[-1]
    await app.until(lambda: app.shown(key) == TURNS[:2], "the first turn on screen", 120)
    app.ctl.send(key, TURNS[2][1], ())
    await app.until(lambda: app.shown(key) == TURNS, "the second turn on screen", 60)
    await app.until(lambda: app.cached(key) == TURNS, "both turns cached", 30)
    return key


async def back_online(app: App, after: int) -> None:
    """Wait until a later connection is up and every session's snapshot has been handled."""
    try:
        await app.until(lambda: app.sup.epoch > after and app.synced, "reconnected", 40)
    except AssertionError as exc:
        st = app.sup.status
        raise AssertionError(
            f"{exc} after epoch {after}: {st.state} epoch {st.epoch} {st.reason!r}, "
            f"synced {app.router.synced_epoch}"
        ) from None


def kept(app: App, key: str, times: list[float | None]) -> tuple[bool, str]:
    """Both turns on screen with the `times` they showed, and cached; how the history came
    back since the last check. A time may become the gateway's own record of it (0.20.1 and
    0.22 keep one per row), never go: the same minute, give or take one."""
    shown, cached = app.shown(key), app.cached(key)
    now = app.times(key)
    timed = sum(
        1 for a, b in zip(now, times, strict=False) if a is not None and b and abs(a - b) < 60
    )
    calls, app.calls[:] = list(app.calls), []
    history = [p for m, p in calls if m == "session.history"]
    paged = [p for p in history if "offset" in p or "limit" in p]
    replays = sum(m == "session.events.since" for m, _ in calls)
    ok = shown[: len(TURNS)] == TURNS and cached[: len(TURNS)] == TURNS and not paged
    ok = ok and timed == len(TURNS)
    return ok, (
        f"on screen {_count(shown)}/4 earlier bubbles ({timed}/4 with their times), "
        f"cached {_count(cached)}/4 rows; "
        f"{len(history)} session.history ({len(paged)} with offset/limit), {replays} replays"
    )


def _count(rows: Shown) -> int:
    return sum(1 for a, b in zip(rows, TURNS, strict=False) if a == b)


@pytest.mark.parametrize("dist", LINES)
async def test_hermes_history_kept_across_reconnects(
    tmp_path: Path, dist: HermesDist, record_figure: RecordFigure
) -> None:
    at = dist.line  # the gateway of rows S@L in tests/reliability/report.py
    figures: list[tuple[str, str, str, bool]] = []
    data, folder = app_folders(tmp_path)
    async with line(tmp_path, dist) as (fake, gw, proxy):
        url = proxy_url(proxy)
        app = start_app(data, url, gw.token)
        try:
            await app.until(lambda: app.synced, "online", 60)
            key = await two_turns(app, fake, folder)
            times = app.times(key)
            assert all(times), times

            # H2: every live connection reset (RST); the client reconnects by itself.
            app.calls.clear()  # from here on: what the reconnect asked
            epoch = app.sup.epoch
            proxy.reset_all()
            await back_online(app, epoch)
            ok, measured = kept(app, key, times)
            figures.append(
                (
                    f"H2-reset@{at}",
                    "TCP reset: both earlier turns shown (with their times) and cached",
                    measured,
                    ok,
                )
            )

            # H3: silent drop, found by the liveness timer; then the network is back.
            epoch = app.sup.epoch
            proxy.set_mode("blackhole")
            await app.until(
                lambda: app.sup.status.state is not ConnectionState.ONLINE, "the drop found", 30
            )
            proxy.set_mode("reset")  # what the blackhole held is lost
            proxy.set_mode("pass")
            await back_online(app, epoch)
            ok, measured = kept(app, key, times)
            figures.append(
                (
                    f"H3-blackhole@{at}",
                    "blackhole: both earlier turns shown (with their times) and cached",
                    measured,
                    ok,
                )
            )

            # H4: the gateway process dies; a new one on the same HERMES_HOME (new port).
            epoch = app.sup.epoch
            assert gw.pid is not None
            os.killpg(gw.pid, signal.SIGKILL)
            await app.until(
                lambda: app.sup.status.state is not ConnectionState.ONLINE, "the death seen", 30
            )
            await gw.launcher.wait_exit()
            endpoint = await gw.launcher.endpoint()  # the same token, a fresh process
            proxy.target_port = _port(endpoint.url)
            app.sup.reconnect_now()
            await back_online(app, epoch)
            resumed = app.router.runtime_id(key)
            ok, measured = kept(app, key, times)
            figures.append(
                (
                    f"H4-restart@{at}",
                    "gateway restarted: resumed by stored id, both earlier turns shown (with their "
                    "times) and cached",
                    f"{measured}; runtime id {resumed}",
                    ok,
                )
            )
        finally:
            await app.close()

        # H1: the app restarts over the same data file and the chat is reopened.
        app = start_app(data, url, gw.token)
        try:
            await app.until(lambda: app.synced, "online again", 60)
            app.ctl.open_session(key)
            await app.until(lambda: key in app.snapshots, "the reopened chat's snapshot", 60)
            ok, measured = kept(app, key, times)
            figures.append(
                (
                    f"H1-reopen@{at}",
                    "reopened after an app restart: both turns shown (with their times) and cached",
                    measured,
                    ok,
                )
            )
        finally:
            await app.close()
    failed: list[str] = []
    for scenario, expected, measured, passed in figures:
        try:
            record_figure(scenario, expected, measured, passed)
        except AssertionError as exc:
            failed.append(str(exc))
    assert not failed, "\n".join(failed)
