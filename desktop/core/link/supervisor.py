"""One ConnectionSupervisor per profile: owns its client, reconnects by the backoff policy
(`backoff`), fences epochs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random as _random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from desktop.common.clock import Clock, TimerHandle
from desktop.common.retry import Retries
from desktop.core.errors import (
    AUTH_CLOSE_CODES,
    DEADLINE_PASSED,
    AuthError,
    ConnectError,
    HermesQtError,
    NotConnectedError,
    StorageError,
)
from desktop.core.link.backoff import RECONNECT, STABLE_AFTER, CloseRepeats
from desktop.core.link.dialect import Dialect
from desktop.core.link.epochs import EpochStore
from desktop.core.link.profiles import Profile, ProfileError, validate_url
from desktop.core.models import ConnectionState, ConnectionStatus
from desktop.core.observers import Observers, Unsubscribe

log = logging.getLogger(__name__)

HISTORY_LIMIT = 32
# Longest a new attempt waits for the previous socket to finish closing (websockets' own close
# timeout is 1 s, and abandoned sockets are aborted at once, so this only bounds a hung close).
CLOSE_GRACE = 5.0


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and how to connect for one attempt; the token is never logged."""

    url: str
    token: str | None = None
    allow_insecure: bool = False

    def __repr__(self) -> str:
        return f"Endpoint(url={self.url!r}, token={'***' if self.token else None})"


class GatewayClientPort(Protocol):
    """The part of JsonRpcGatewayClient the supervisor and session router use."""

    @property
    def generation(self) -> int: ...

    @property
    def dialect(self) -> Dialect | None: ...

    async def connect(self) -> Any: ...

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> Any: ...

    async def reply(self, request_id: int | str, result: Any) -> None: ...

    def subscribe(self, listener: Callable[[Any, int], None]) -> Callable[[], None]: ...

    def on_closed(self, callback: Callable[[str, int | None, int], None]) -> Any: ...

    def invalidate(self, reason: str) -> None: ...

    async def close(self) -> None: ...


class LauncherPort(Protocol):
    """Starts (or restarts) the gateway a profile depends on and says where it listens."""

    async def endpoint(self) -> Endpoint: ...

    def unresponsive(self, reason: str) -> None: ...

    async def close(self) -> None: ...


ClientFactory = Callable[[Endpoint], GatewayClientPort]
StatusListener = Callable[[ConnectionStatus], None]
EventListener = Callable[[Any, int], None]


@dataclass(frozen=True, slots=True)
class ConnectionDiagnostics:
    """What a diagnostics panel shows about one profile's connection."""

    state: ConnectionState
    epoch: int
    generation: int
    reconnect_count: int
    last_inbound_age: float | None
    rtt_samples: tuple[float, ...]
    reasons: tuple[tuple[float, str], ...]
    close_codes: tuple[int, ...]
    last_connected_at: float | None


def _repeat_message(count: int, reason: str) -> str:
    cause = reason
    if "exceeds limit" in reason or "too big" in reason:
        cause = f"the gateway sent a message larger than this app accepts ({reason})"
    return (
        f"stopped reconnecting: the connection closed {count} times in a row for the same "
        f"cause before it could be used: {cause}. Press Reconnect to try again"
    )


def is_fatal(exc: BaseException) -> bool:
    """One place deciding retry versus stop: only errors that say so are fatal."""
    return isinstance(exc, HermesQtError) and not exc.is_retryable()


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, HermesQtError) else f"{type(exc).__name__}: {text}"


class ConnectionSupervisor:
    """Keeps one profile connected: at most one live client, epochs that only grow.

    Every attempt takes a new epoch from the store (durable before use). Anything that
    completes after an await is checked against the current epoch and dropped if stale.
    Intentional close and pause are flags the reconnect loop obeys, never races with.
    """

    def __init__(
        self,
        profile: Profile,
        *,
        client_factory: ClientFactory,
        epoch_store: EpochStore,
        clock: Clock,
        random: Callable[[], float] = _random.random,
        launcher: LauncherPort | None = None,
        token: str | None = None,
    ) -> None:
        self._profile = profile
        self._factory = client_factory
        self._store = epoch_store
        self._clock = clock
        self._launcher = launcher
        self._token = token
        self._backoff = Retries(RECONNECT, random=random)
        self._epoch = epoch_store.current(profile.id)
        self._client: GatewayClientPort | None = None
        self._client_epoch = 0
        self._unsubscribe: Callable[[], None] | None = None
        self._status = ConnectionStatus(ConnectionState.CLOSED, self._epoch, 0)
        self._status_listeners: Observers[StatusListener] = Observers("status")
        self._event_listeners: Observers[EventListener] = Observers("event")
        self._task: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._lost = asyncio.Event()
        self._lost_reason = ""
        self._lost_code: int | None = None
        self._skip_backoff = False
        self._paused = False
        self._closed = False
        self._started = False
        self._reconnect_count = 0
        self._connect_count = 0
        self._reasons: deque[tuple[float, str]] = deque(maxlen=HISTORY_LIMIT)
        self._close_codes: deque[int] = deque(maxlen=HISTORY_LIMIT)
        self._last_connected_at: float | None = None
        # The close code seen on each not-useful connection in a row (backoff's policy).
        self._repeats = CloseRepeats()

    # -- observers -----------------------------------------------------------------------

    @property
    def profile(self) -> Profile:
        return self._profile

    @property
    def status(self) -> ConnectionStatus:
        return self._status

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def client(self) -> GatewayClientPort | None:
        """The live client while ONLINE, else None."""
        return self._client if self._status.state is ConnectionState.ONLINE else None

    @property
    def dialect(self) -> Dialect | None:
        """What the gateway on the live socket does (None while not ONLINE)."""
        client = self.client
        return client.dialect if client is not None else None

    def add_status_listener(self, listener: StatusListener) -> Unsubscribe:
        return self._status_listeners.subscribe(listener)

    def subscribe(self, listener: EventListener) -> Unsubscribe:
        """listener(event, epoch) for every event of the current epoch's client."""
        return self._event_listeners.subscribe(listener)

    def diagnostics(self) -> ConnectionDiagnostics:
        client = self._client
        inbound = getattr(client, "last_inbound_at", None) if client is not None else None
        rtts: Sequence[float] = ()
        if client is not None:
            samples = getattr(client, "heartbeat_rtts", None) or getattr(
                client, "rtt_samples", None
            )
            rtts = tuple(samples or ())
        return ConnectionDiagnostics(
            state=self._status.state,
            epoch=self._epoch,
            generation=self._generation(),
            reconnect_count=self._reconnect_count,
            last_inbound_age=(self._clock.monotonic() - inbound) if inbound else None,
            rtt_samples=tuple(rtts),
            reasons=tuple(self._reasons),
            close_codes=tuple(self._close_codes),
            last_connected_at=self._last_connected_at,
        )

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> Any:
        """Call on the live client; NotConnectedError (nothing sent) when not ONLINE."""
        client = self.client
        if client is None:
            raise NotConnectedError(f"{self._profile.name}: not connected")
        if timeout is None:
            return await client.call(method, params)
        return await client.call(method, params, timeout=timeout)

    async def reply(self, request_id: int | str, result: Any) -> None:
        """Answer a server->client request on the live client; NotConnectedError when none."""
        client = self.client
        if client is None:
            raise NotConnectedError(f"{self._profile.name}: not connected")
        await client.reply(request_id, result)

    # -- intents -------------------------------------------------------------------------

    def start(self) -> None:
        """Begin connecting (idempotent)."""
        if self._closed or self._started:
            return
        self._started = True
        self._spawn()

    def pause(self) -> None:
        """Disconnect and stay offline until resume(); no attempts while paused."""
        if self._closed or self._paused:
            return
        self._paused = True
        self._stop_loop()
        self._emit(ConnectionState.PAUSED, reason="paused by user")

    def resume(self) -> None:
        """Leave PAUSED or FAILED and connect again at once."""
        if self._closed:
            return
        self._paused = False
        self._started = True
        self._backoff.reset()
        self._repeats.clear()
        if self._task is None or self._task.done() or self._status.state is ConnectionState.FAILED:
            self._spawn()

    def reconnect_now(self) -> None:
        """Skip the backoff wait, or drop the live socket and connect again at once."""
        if self._closed or self._paused or not self._started:
            return
        if self._status.state is ConnectionState.FAILED:
            self.resume()
            return
        self._skip_backoff = True
        if self._status.state is ConnectionState.ONLINE and self._client is not None:
            self._client.invalidate("reconnect requested")
            self._mark_lost("reconnect requested", None)
        self._wake.set()

    def network_changed(self) -> None:
        """The OS reports a different network: the old socket may be bound to a dead route."""
        self.reconnect_now()

    def woke_up(self) -> None:
        """The machine resumed from sleep: sockets from before are probably dead."""
        self.reconnect_now()

    async def close(self) -> None:
        """Intentional close: no further attempts, no socket left open."""
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        task = self._task
        self._stop_loop()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(task, return_exceptions=True)
        self._drop_client("closed by user")
        await self._settle_closing()
        if self._launcher is not None:
            await self._launcher.close()
        self._emit(ConnectionState.CLOSED, reason="closed")

    # -- the loop --------------------------------------------------------------------------

    def _spawn(self) -> None:
        previous = self._task
        self._task = asyncio.get_running_loop().create_task(
            self._run(previous), name=f"supervisor:{self._profile.id}"
        )

    def _stop_loop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def _run(self, previous: asyncio.Task[None] | None) -> None:
        try:
            if previous is not None and not previous.done():
                # The old loop is still closing its socket: wait, so two never overlap.
                previous.cancel()
                await asyncio.gather(previous, return_exceptions=True)
            while not self._closed and not self._paused:
                fatal = await self._attempt()
                if fatal or self._closed or self._paused:
                    return
                if self._skip_backoff:
                    self._skip_backoff = False
                    continue
                delay = self._backoff.next_delay()
                retry_at = self._clock.monotonic() + delay
                reason = self._lost_reason
                self._emit(ConnectionState.RECONNECTING, reason=reason, retry_at=retry_at)
                await self._wait(delay)
                self._skip_backoff = False
        finally:
            # Cancelled (pause/close) or done: the socket of this loop must not outlive it.
            self._drop_client("supervisor loop ended")

    async def _wait(self, delay: float) -> None:
        self._wake.clear()
        timer: TimerHandle = self._clock.call_later(delay, self._wake.set)
        try:
            await self._wake.wait()
        finally:
            timer.cancel()

    async def _attempt(self) -> bool:
        """One connection attempt and, if it succeeds, its whole life. True when fatal.

        Old clients are invalidated synchronously (RECONNECTING shows at once), and their
        sockets are torn down before a new one opens: never two live sockets per profile.
        """
        self._drop_client("superseded by a new attempt")
        await self._settle_closing(CLOSE_GRACE)
        try:
            epoch = self._store.next_epoch(self._profile.id)
        except StorageError as exc:
            # This computer's disk, not the link: said as the reason, and tried again after
            # the backoff (room may be made meanwhile); never the end of the loop.
            log.warning("%s", exc)
            self._record(str(exc))
            self._lost_reason = str(exc)
            return False
        self._epoch = epoch
        self._lost.clear()
        self._lost_reason = ""
        self._lost_code = None
        self._emit(ConnectionState.CONNECTING, reason=self._last_reason())
        try:
            endpoint = await self._endpoint()
            if self._stale(epoch):
                return False
            client = self._factory(endpoint)
            self._install(client, epoch)
            await client.connect()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if self._stale(epoch):
                return False
            reason = _describe(exc)
            self._record(reason)
            self._drop_client(reason)
            if self._launcher is not None and isinstance(exc, ConnectError) and exc.silent:
                self._launcher.unresponsive(reason)  # our own child, silent on loopback: hung
            if is_fatal(exc):
                self._emit(ConnectionState.FAILED, reason=reason)
                return True
            self._lost_reason = reason
            return False
        if self._stale(epoch):
            self._drop_client("stale attempt")
            return False
        self._connect_count += 1
        if self._connect_count > 1:
            self._reconnect_count += 1
        online_at = self._clock.monotonic()
        self._last_connected_at = self._clock.wall()
        self._emit(ConnectionState.ONLINE)
        if not self._lost.is_set():
            await self._lost.wait()
        if self._stale(epoch):
            return False
        reason = self._lost_reason or "connection lost"
        self._record(reason)
        if self._launcher is not None and reason == DEADLINE_PASSED:
            self._launcher.unresponsive(reason)
        # No await between the loss and the RECONNECTING status: a dead peer's close handshake
        # can take the whole close timeout, and the user should not wait for it.
        self._drop_client(reason)
        code = self._lost_close_code()
        if code in AUTH_CLOSE_CODES:
            self._emit(ConnectionState.FAILED, reason=f"authentication refused: {reason}")
            return True
        useful = self._clock.monotonic() - online_at >= STABLE_AFTER
        if useful:
            self._backoff.reset()
        if self._repeats.repeating(code, useful):
            log.warning(
                "%s: stopped reconnecting after %d closes in a row (%s)",
                self._profile.name,
                len(self._repeats),
                reason,
            )
            self._emit(ConnectionState.FAILED, reason=_repeat_message(len(self._repeats), reason))
            return True
        return False

    async def _endpoint(self) -> Endpoint:
        if self._launcher is not None:
            return await self._launcher.endpoint()
        try:
            validate_url(self._profile.url, allow_insecure=self._profile.allow_insecure)
        except ProfileError as exc:
            # A URL that cannot work will not start working by retrying it.
            raise ConnectError(f"invalid gateway URL: {exc}", retryable=False) from exc
        return Endpoint(self._profile.url, self._token, self._profile.allow_insecure)

    def _install(self, client: GatewayClientPort, epoch: int) -> None:
        self._client = client
        self._client_epoch = epoch

        def on_event(event: Any, generation: int) -> None:
            # Late frames from an older client or epoch are fenced off here.
            if self._closed or self._client is not client or self._epoch != epoch:
                return
            self._event_listeners.emit(lambda listener: listener(event, epoch))

        def on_closed(reason: str, code: int | None, generation: int) -> None:
            if self._client is not client or self._epoch != epoch:
                return
            if code is not None:
                self._close_codes.append(code)
            self._mark_lost(str(reason), code)

        self._unsubscribe = client.subscribe(on_event)
        client.on_closed(on_closed)

    def _lost_close_code(self) -> int | None:
        # A method, not the attribute: it changes across awaits (set by on_closed).
        return self._lost_code

    def _mark_lost(self, reason: str, code: int | None) -> None:
        if not self._lost.is_set():
            self._lost_reason = reason
            self._lost_code = code
            self._lost.set()

    def _drop_client(self, reason: str) -> None:
        """Invalidate the client now (it stops being live) and close it in the background."""
        client, self._client = self._client, None
        if client is None:
            return
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        try:
            client.invalidate(reason)
        except Exception:
            log.exception("invalidate failed")
        # Tracked, not awaited: close() settles every one, so none outlives the supervisor.
        closing = asyncio.get_running_loop().create_task(self._close_client(client))
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    @staticmethod
    async def _close_client(client: GatewayClientPort) -> None:
        try:
            await client.close()
        except Exception:
            log.exception("closing the gateway client failed")

    async def _settle_closing(self, grace: float | None = None) -> None:
        """Wait for old sockets to finish closing; with `grace`, at most that long (clock time).

        Real sockets are aborted on invalidation, so this is instant for them; the grace only
        bounds a close that hangs, which must never block reconnecting forever.
        """
        if grace is None:
            while self._closing:
                await asyncio.gather(*list(self._closing), return_exceptions=True)
            return
        timer = asyncio.get_running_loop().create_task(self._clock.sleep(grace))
        try:
            while self._closing and not timer.done():
                await asyncio.wait([*self._closing, timer], return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            await asyncio.gather(timer, return_exceptions=True)

    # -- helpers ---------------------------------------------------------------------------

    def _stale(self, epoch: int) -> bool:
        return self._closed or self._paused or self._epoch != epoch

    def _generation(self) -> int:
        client = self._client
        return client.generation if client is not None else self._status.generation

    def _record(self, reason: str) -> None:
        self._reasons.append((self._clock.wall(), reason))

    def _last_reason(self) -> str:
        return self._reasons[-1][1] if self._reasons else ""

    def _emit(
        self, state: ConnectionState, *, reason: str = "", retry_at: float | None = None
    ) -> None:
        status = ConnectionStatus(
            state=state,
            epoch=self._epoch,
            generation=self._generation(),
            reason=reason,
            retry_at=retry_at,
            last_connected_at=self._last_connected_at,
        )
        self._status = status
        self._status_listeners.emit(lambda listener: listener(status))


__all__ = [
    "AUTH_CLOSE_CODES",
    "AuthError",
    "ClientFactory",
    "ConnectionDiagnostics",
    "ConnectionSupervisor",
    "Endpoint",
    "GatewayClientPort",
    "LauncherPort",
    "is_fatal",
]
