"""ConnectionSupervisor: epochs, backoff, retry vs fatal, pause/close races, one socket at most."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

from desktop.common.clock import ManualClock
from desktop.common.retry import Retries
from desktop.core.errors import AuthError, ConnectError, ProtocolError
from desktop.core.link.backoff import RECONNECT, REPEAT_LIMIT, STABLE_AFTER
from desktop.core.link.client import JsonRpcGatewayClient
from desktop.core.link.epochs import FileEpochStore, MemoryEpochStore
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.link.supervisor import (
    CLOSE_GRACE,
    ClientFactory,
    ConnectionSupervisor,
    Endpoint,
)
from desktop.core.models import ConnectionState, ConnectionStatus
from tests.core.fakes import FakeGateway
from tests.core.supervisor_fakes import FakeNet, until

PROFILE = Profile(id="p1", name="Test", kind=ProfileKind.REMOTE, url="ws://127.0.0.1:9/api/ws")


def make(
    net: FakeNet,
    clock: ManualClock,
    store: object | None = None,
    random: float = 0.5,
    factory: ClientFactory | None = None,
) -> tuple[ConnectionSupervisor, list[ConnectionStatus]]:
    sup = ConnectionSupervisor(
        PROFILE,
        client_factory=factory or net.factory,
        epoch_store=store or MemoryEpochStore(),  # type: ignore[arg-type]
        clock=clock,
        random=lambda: random,
        token="secret-token",
    )
    seen: list[ConnectionStatus] = []
    sup.add_status_listener(seen.append)
    return sup, seen


def state(sup: ConnectionSupervisor) -> ConnectionState:
    return sup.status.state


# -- backoff --------------------------------------------------------------------------------


def test_backoff_full_jitter_stays_between_one_and_thirty_seconds() -> None:
    values = itertools.cycle([0.0, 0.37, 0.99, 1.0])
    b = Retries(RECONNECT, random=lambda: next(values))
    delays = [b.next_delay() for _ in range(200)]
    assert min(delays) >= 1.0 and max(delays) <= 30.0
    assert delays[0] == 1.0  # random 0 -> the floor
    assert 29.9 < max(delays) <= 30.0  # the cap is reached and held
    assert len({round(d, 3) for d in delays}) > 4  # jittered, not a fixed ladder
    assert b.attempt == 200


def test_backoff_grows_then_resets_on_success() -> None:
    b = Retries(RECONNECT, random=lambda: 1.0)
    first = [b.next_delay() for _ in range(6)]
    assert first == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    b.reset()
    assert b.attempt == 0 and b.next_delay() == 2.0


# -- epochs ---------------------------------------------------------------------------------


async def test_epochs_strictly_grow_and_survive_a_new_supervisor(tmp_path: Path) -> None:
    path = tmp_path / "epochs.json"
    clock = ManualClock()
    net = FakeNet(outcomes=[ConnectError("refused")] * 3)
    sup, seen = make(net, clock, FileEpochStore(path))
    sup.start()
    for i in range(3):
        n = i + 1
        await until(lambda n=n: net.attempts == n and state(sup) is ConnectionState.RECONNECTING)
        clock.advance(30)
    await until(lambda: state(sup) is ConnectionState.ONLINE, "online")
    epochs = [s.epoch for s in seen if s.state is ConnectionState.CONNECTING]
    assert epochs == sorted(set(epochs)) and len(epochs) == 4
    await sup.close()

    # A restart (new store on the same file, new supervisor) continues above the last epoch.
    net2 = FakeNet()
    sup2, seen2 = make(net2, clock, FileEpochStore(path))
    sup2.start()
    await until(lambda: state(sup2) is ConnectionState.ONLINE, "online again")
    assert sup2.epoch > epochs[-1]
    assert seen2[-1].epoch == sup2.epoch
    await sup2.close()


async def test_an_epoch_the_disk_cannot_keep_is_told_and_retried_not_a_dead_loop(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "data"
    folder.write_text("a file where the data folder should be")  # every write there fails
    clock = ManualClock()
    net = FakeNet()
    sup, _ = make(net, clock, FileEpochStore(folder / "epochs.json"))
    sup.start()
    await until(lambda: state(sup) is ConnectionState.RECONNECTING, "the attempt given up")

    assert sup.status.reason.startswith("could not save the connection epoch")
    assert net.attempts == 0, "no socket opened under an epoch that may be handed out again"
    folder.unlink()
    folder.mkdir()  # the user made room
    clock.advance(30)
    await until(lambda: state(sup) is ConnectionState.ONLINE, "online once it can be saved")
    assert FileEpochStore(folder / "epochs.json").current(PROFILE.id) == sup.epoch == 1
    await sup.close()


# -- retry versus fatal ---------------------------------------------------------------------


async def test_retryable_failures_are_retried_forever_within_backoff_bounds() -> None:
    clock = ManualClock()
    net = FakeNet(default=ConnectError("connection refused"))
    sup, seen = make(net, clock, random=1.0)
    sup.start()
    for i in range(100):
        await until(lambda: state(sup) is ConnectionState.RECONNECTING, f"backoff {i}")
        status = sup.status
        assert status.retry_at is not None
        delay = status.retry_at - clock.monotonic()
        assert 1.0 <= delay <= 30.0
        assert "refused" in status.reason
        clock.advance(delay)
        want = i + 2
        await until(lambda want=want: net.attempts == want, f"attempt {want}")
    assert all(s.state is not ConnectionState.PAUSED for s in seen)
    assert all(s.state is not ConnectionState.FAILED for s in seen)
    assert sup.diagnostics().reasons[-1][1] == "connection refused"
    assert len(sup.diagnostics().reasons) <= 32  # history is bounded
    assert net.live <= 1
    await sup.close()
    assert net.live == 0


async def test_fatal_auth_error_fails_with_zero_further_attempts() -> None:
    clock = ManualClock()
    net = FakeNet(default=AuthError("HTTP 403 on upgrade", status=403))
    sup, _ = make(net, clock)
    sup.start()
    await until(lambda: state(sup) is ConnectionState.FAILED, "failed")
    assert "403" in sup.status.reason
    clock.advance(3600)
    for _ in range(20):
        await asyncio.sleep(0)
    assert net.attempts == 1
    assert clock.pending == 0 and net.live == 0
    await sup.close()


async def test_protocol_error_is_fatal_and_resume_tries_again() -> None:
    clock = ManualClock()
    net = FakeNet(outcomes=[ProtocolError("protocol version 9 not understood")])
    sup, _ = make(net, clock)
    sup.start()
    await until(lambda: state(sup) is ConnectionState.FAILED, "failed")
    assert net.attempts == 1
    sup.resume()  # the user fixed something and asks again
    await until(lambda: state(sup) is ConnectionState.ONLINE, "online")
    assert net.attempts == 2
    await sup.close()


async def test_auth_close_code_after_online_is_fatal() -> None:
    clock = ManualClock()
    net = FakeNet()
    sup, _ = make(net, clock)
    sup.start()
    await until(lambda: state(sup) is ConnectionState.ONLINE, "online")
    net.clients[-1].drop("policy violation", 4403)
    await until(lambda: state(sup) is ConnectionState.FAILED, "failed")
    clock.advance(600)
    for _ in range(20):
        await asyncio.sleep(0)
    assert net.attempts == 1 and net.live == 0
    assert 4403 in sup.diagnostics().close_codes
    await sup.close()


async def test_dropped_socket_reconnects_after_backoff_and_counts_it() -> None:
    clock = ManualClock()
    net = FakeNet()
    sup, _ = make(net, clock, random=0.0)
    sup.start()
    await until(lambda: state(sup) is ConnectionState.ONLINE, "online")
    first_epoch = sup.epoch
    net.clients[-1].drop("heartbeat deadline expired", 1011)
    await until(lambda: state(sup) is ConnectionState.RECONNECTING, "reconnecting")
    assert sup.status.reason == "heartbeat deadline expired"
    assert net.attempts == 1  # waits for the backoff slot
    clock.advance(1.0)
    await until(lambda: state(sup) is ConnectionState.ONLINE, "online again")
    assert sup.epoch > first_epoch
    diag = sup.diagnostics()
    assert diag.reconnect_count == 1 and diag.last_connected_at is not None
    assert diag.generation == net.clients[-1].generation
    assert "secret-token" not in repr(net.clients[-1].endpoint)
    await sup.close()


# -- intents --------------------------------------------------------------------------------


async def test_pause_disconnects_and_resume_reconnects() -> None:
    clock = ManualClock()
    net = FakeNet()
    sup, _ = make(net, clock)
    sup.start()
    await until(lambda: state(sup) is ConnectionState.ONLINE, "online")
    sup.pause()
    assert state(sup) is ConnectionState.PAUSED
    await until(lambda: net.live == 0, "socket closed")
    clock.advance(600)
    for _ in range(20):
        await asyncio.sleep(0)
    assert net.attempts == 1 and state(sup) is ConnectionState.PAUSED
    sup.resume()
    await until(lambda: state(sup) is ConnectionState.ONLINE, "online after resume")
    assert net.attempts == 2 and net.max_live == 1
    await sup.close()


async def test_reconnect_now_skips_the_backoff_wait() -> None:
    clock = ManualClock()
    net = FakeNet(outcomes=[ConnectError("refused")], default="ok")
    sup, _ = make(net, clock, random=1.0)
    sup.start()
    await until(lambda: state(sup) is ConnectionState.RECONNECTING, "backoff")
    sup.reconnect_now()
    await until(lambda: state(sup) is ConnectionState.ONLINE, "online without waiting")
    assert net.attempts == 2 and clock.pending == 0
    await sup.close()


async def test_network_changed_reconnects_at_once_with_one_socket() -> None:
    clock = ManualClock()
    net = FakeNet()
    sup, _ = make(net, clock)
    sup.start()
    await until(lambda: state(sup) is ConnectionState.ONLINE, "online")
    old = net.clients[-1]
    epoch = sup.epoch
    sup.network_changed()
    await until(lambda: state(sup) is ConnectionState.ONLINE and sup.epoch > epoch, "new socket")
    assert not old.socket_open and net.live == 1 and net.max_live == 1
    sup.woke_up()
    await until(lambda: len(net.clients) == 3 and state(sup) is ConnectionState.ONLINE, "again")
    assert net.max_live == 1
    await sup.close()


async def test_close_racing_a_pending_backoff_timer_never_reconnects() -> None:
    clock = ManualClock()
    net = FakeNet(default=ConnectError("refused"))
    sup, seen = make(net, clock)
    sup.start()
    await until(lambda: state(sup) is ConnectionState.RECONNECTING, "backoff")
    due = sup.status.retry_at
    assert due is not None
    closing = asyncio.ensure_future(sup.close())
    clock.advance(due - clock.monotonic())  # the timer falls due while close runs
    await closing
    clock.advance(600)
    for _ in range(20):
        await asyncio.sleep(0)
    assert net.attempts == 1 and net.live == 0
    assert state(sup) is ConnectionState.CLOSED and seen[-1].state is ConnectionState.CLOSED


async def test_close_racing_a_handshake_in_flight_leaves_no_socket() -> None:
    clock = ManualClock()
    loop = asyncio.get_running_loop()
    handshake: asyncio.Future[None] = loop.create_future()
    net = FakeNet(outcomes=[handshake])
    sup, _ = make(net, clock)
    sup.start()
    await until(lambda: net.live == 1, "handshake started")
    await sup.close()
    assert not handshake.done() or handshake.cancelled()
    clock.advance(600)
    for _ in range(20):
        await asyncio.sleep(0)
    assert net.attempts == 1 and net.live == 0 and state(sup) is ConnectionState.CLOSED


async def test_flapping_never_holds_two_live_sockets() -> None:
    clock = ManualClock()
    loop = asyncio.get_running_loop()
    net = FakeNet()
    sup, seen = make(net, clock, random=0.0)
    sup.start()
    for i in range(30):
        await until(lambda: state(sup) is ConnectionState.ONLINE, f"online {i}")
        before = len(net.clients)
        if i % 3 == 0:
            net.clients[-1].drop("reset by peer")
            await until(lambda: state(sup) is ConnectionState.RECONNECTING, "backoff")
            clock.advance(2)
        elif i % 3 == 1:
            # A network change lands while the next handshake is still in flight.
            hang: asyncio.Future[None] = loop.create_future()
            net.outcomes.append(hang)
            sup.network_changed()
            await until(lambda: net.live == 1 and not net.outcomes, "handshake in flight")
            sup.network_changed()
            hang.set_result(None)
        else:
            sup.reconnect_now()
        await until(
            lambda b=before: len(net.clients) > b and net.clients[-1].connected, "next socket"
        )
    await until(lambda: state(sup) is ConnectionState.ONLINE, "final online")
    epochs = [s.epoch for s in seen if s.state is ConnectionState.CONNECTING]
    assert all(a < b for a, b in itertools.pairwise(epochs))
    assert net.max_live == 1
    await sup.close()
    assert net.live == 0


async def test_events_from_an_old_epoch_are_dropped() -> None:
    clock = ManualClock()
    net = FakeNet()
    sup, _ = make(net, clock, random=0.0)
    got: list[tuple[str, int]] = []
    sup.subscribe(lambda ev, epoch: got.append((ev.payload.get("text", ""), epoch)))
    sup.start()
    await until(lambda: state(sup) is ConnectionState.ONLINE, "online")
    old = net.clients[-1]
    old.emit("message.delta", "s1", text="first")
    sup.reconnect_now()
    await until(lambda: state(sup) is ConnectionState.ONLINE and len(net.clients) == 2, "new")
    old.emit("message.delta", "s1", text="late frame from the old socket")
    net.clients[-1].emit("message.delta", "s1", text="second")
    assert [t for t, _ in got] == ["first", "second"]
    assert got[1][1] == sup.epoch > got[0][1]
    await sup.close()
    net.clients[-1].emit("message.delta", "s1", text="after close")
    assert len(got) == 2


# -- with the real JsonRpcGatewayClient over the in-memory transport ------------------------


def real_client_supervisor(
    clock: ManualClock,
) -> tuple[ConnectionSupervisor, FakeGateway]:
    gw = FakeGateway()

    def factory(endpoint: Endpoint) -> JsonRpcGatewayClient:
        return JsonRpcGatewayClient(
            endpoint.url, token=endpoint.token, clock=clock, transport_factory=gw.factory
        )

    sup, _ = make(FakeNet(), clock, factory=factory)
    return sup, gw


def live_transports(gw: FakeGateway) -> int:
    return sum(1 for p in gw.peers if p.transport.local_open)


async def test_real_client_heartbeat_expiry_reconnects_and_auth_close_fails() -> None:
    clock = ManualClock()
    sup, gw = real_client_supervisor(clock)
    sup.start()
    await until(lambda: state(sup) is ConnectionState.ONLINE, "online")
    assert sup.dialect.heartbeat
    gw.peer.blackhole()  # silent drop: nothing arrives any more
    clock.advance(46)  # past the 45 s deadline
    await until(lambda: state(sup) is ConnectionState.RECONNECTING, "dead socket detected")
    clock.advance(30)
    await until(lambda: state(sup) is ConnectionState.ONLINE and len(gw.peers) == 2, "back")
    assert live_transports(gw) == 1
    gw.peer.close(4403, "token revoked")
    await until(lambda: state(sup) is ConnectionState.FAILED, "auth close is fatal")
    clock.advance(600)
    await until(lambda: live_transports(gw) == 0, "closed")
    assert len(gw.peers) == 2
    await sup.close()


async def test_real_client_auth_refused_on_upgrade_is_fatal() -> None:
    clock = ManualClock()
    sup, gw = real_client_supervisor(clock)
    gw.connect_errors.append(AuthError("HTTP 403", status=403))
    sup.start()
    await until(lambda: state(sup) is ConnectionState.FAILED, "failed")
    clock.advance(600)
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(gw.connect_kwargs) == 1 and not gw.peers
    await sup.close()


async def test_plain_ws_to_a_remote_host_fails_without_any_attempt() -> None:
    clock = ManualClock()
    net = FakeNet()
    remote = Profile(id="r", name="R", kind=ProfileKind.REMOTE, url="ws://203.0.113.5/api/ws")
    sup = ConnectionSupervisor(
        remote, client_factory=net.factory, epoch_store=MemoryEpochStore(), clock=clock
    )
    sup.start()
    await until(lambda: sup.status.state is ConnectionState.FAILED, "failed")
    assert "wss://" in sup.status.reason
    assert net.attempts == 0 and clock.pending == 0
    await sup.close()


async def test_dead_socket_shows_reconnecting_before_its_close_handshake_ends() -> None:
    # A blackholed peer never answers the close handshake: websockets waits out its close
    # timeout. The user must see RECONNECTING (why, and when the next try is) at detection.
    clock = ManualClock()
    gw = FakeGateway()
    clients: list[JsonRpcGatewayClient] = []

    def factory(endpoint: Endpoint) -> JsonRpcGatewayClient:
        client = JsonRpcGatewayClient(
            endpoint.url, token=endpoint.token, clock=clock, transport_factory=gw.factory
        )
        clients.append(client)
        return client

    sup, seen = make(FakeNet(), clock, factory=factory, random=0.0)
    sup.start()
    await until(lambda: state(sup) is ConnectionState.ONLINE, "online")
    old = gw.peer.transport
    handshake_done = asyncio.Event()
    real_close = old.close

    async def close_never_answered() -> None:
        await handshake_done.wait()
        await real_close()

    old.close = close_never_answered  # type: ignore[method-assign]
    gw.peer.blackhole()
    clock.advance(46)  # past the 45 s deadline
    await until(lambda: state(sup) is ConnectionState.RECONNECTING, "shown before the close")
    status = sup.status
    assert status.reason == "heartbeat deadline passed"
    assert status.retry_at == clock.monotonic() + 1.0  # the first backoff slot
    assert old.close_calls == 0 and old.local_open  # the handshake is still pending
    assert not clients[0].is_open  # ...but the old client is already invalidated

    clock.advance(1.0)  # the backoff slot is due, but the old socket is not closed yet
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(gw.peers) == 1, "a second socket opened while the first was still open"
    handshake_done.set()  # the old socket finishes closing: now the new one may open
    await until(lambda: state(sup) is ConnectionState.ONLINE and len(gw.peers) == 2, "back")
    assert [c.is_open for c in clients] == [False, True]  # one live client, never two
    assert [s.state for s in seen].count(ConnectionState.RECONNECTING) == 1
    await sup.close()
    assert live_transports(gw) == 0


async def test_a_close_that_hangs_delays_the_next_socket_only_by_the_grace() -> None:
    clock = ManualClock()
    gw = FakeGateway()

    def factory(endpoint: Endpoint) -> JsonRpcGatewayClient:
        return JsonRpcGatewayClient(
            endpoint.url, token=endpoint.token, clock=clock, transport_factory=gw.factory
        )

    sup, _seen = make(FakeNet(), clock, factory=factory, random=0.0)
    sup.start()
    await until(lambda: state(sup) is ConnectionState.ONLINE, "online")
    old = gw.peer.transport
    never = asyncio.Event()

    async def close_hangs() -> None:
        await never.wait()

    old.close = close_hangs  # type: ignore[method-assign]
    gw.peer.blackhole()
    clock.advance(46)
    await until(lambda: state(sup) is ConnectionState.RECONNECTING, "reconnecting")
    clock.advance(1.0)  # the backoff slot: the attempt now waits for the hung close
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(gw.peers) == 1
    clock.advance(CLOSE_GRACE)  # ...but only for the grace
    await until(lambda: state(sup) is ConnectionState.ONLINE and len(gw.peers) == 2, "back")
    never.set()
    await sup.close()


# -- connections that die before they are useful ---------------------------------------------


async def _online_then_drop(
    sup: ConnectionSupervisor, net: FakeNet, clock: ManualClock, code: int, lived: float
) -> float:
    """Wait for ONLINE, stay `lived` seconds, drop with `code`; returns the backoff delay."""
    attempts = net.attempts
    await until(lambda: state(sup) is ConnectionState.ONLINE and net.attempts > attempts, "on")
    clock.advance(lived)
    net.clients[-1].drop("frame with 9900000 bytes exceeds limit of 8388608 bytes", code)
    await until(lambda: state(sup) is not ConnectionState.ONLINE, "dropped")
    status = sup.status
    if status.state is not ConnectionState.RECONNECTING or status.retry_at is None:
        return -1.0
    delay = status.retry_at - clock.monotonic()
    clock.advance(delay)
    return delay


async def test_backoff_resets_only_after_a_connection_was_useful() -> None:
    clock = ManualClock()
    net = FakeNet()
    sup, _ = make(net, clock, random=1.0)  # every delay at its ceiling: 2, 4, 8, ...
    sup.start()
    short = [await _online_then_drop(sup, net, clock, 1006, lived=1.0) for _ in range(4)]
    assert short == [2.0, 4.0, 8.0, 16.0]  # online for a second each time: still backing off
    assert await _online_then_drop(sup, net, clock, 1006, lived=STABLE_AFTER) == 2.0
    assert state(sup) is not ConnectionState.FAILED  # a network drop is never a "loop"
    await sup.close()


async def test_the_same_frame_closing_every_new_connection_stops_with_a_clear_reason() -> None:
    clock = ManualClock()
    net = FakeNet()
    sup, _ = make(net, clock, random=0.0)
    sup.start()
    for _ in range(REPEAT_LIMIT - 1):
        assert await _online_then_drop(sup, net, clock, 1009, lived=0.5) > 0
    assert await _online_then_drop(sup, net, clock, 1009, lived=0.5) == -1.0
    assert state(sup) is ConnectionState.FAILED
    assert "larger than this app accepts" in sup.status.reason
    assert "Press Reconnect" in sup.status.reason
    clock.advance(600)
    for _ in range(20):
        await asyncio.sleep(0)
    assert net.attempts == REPEAT_LIMIT and net.live == 0  # no loop: nothing more was tried
    sup.resume()  # the user asks again: connects, and gets REPEAT_LIMIT more tries
    assert await _online_then_drop(sup, net, clock, 1009, lived=0.5) > 0
    await sup.close()


async def test_a_frame_too_big_after_a_useful_connection_is_not_counted_as_a_loop() -> None:
    clock = ManualClock()
    net = FakeNet()
    sup, _ = make(net, clock, random=0.0)
    sup.start()
    for _ in range(REPEAT_LIMIT + 2):
        assert await _online_then_drop(sup, net, clock, 1009, lived=STABLE_AFTER) > 0
    assert state(sup) is not ConnectionState.FAILED
    await sup.close()
