"""JSON-RPC gateway client: one socket generation at a time, calls, events, and the heartbeat and
deadline timers whose rule is `liveness`."""

from __future__ import annotations

import asyncio
import itertools
import logging
import ssl as ssl_lib
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from desktop.common.clock import AsyncioClock, Clock, TimerHandle
from desktop.common.codes import METHOD_NOT_FOUND
from desktop.common.methods import (
    CLIENT_CAPABILITIES,
    GATEWAY_PING,
    READY_EVENT,
    SERVER_REQUEST_KINDS,
)
from desktop.core.errors import (
    AUTH_CLOSE_CODES,
    CLOSE_TOO_BIG,
    DEADLINE_PASSED,
    READY_TIMED_OUT,
    AuthError,
    CallTimeoutError,
    ConnectError,
    ConnectionLostError,
    GatewayError,
    NotConnectedError,
    RpcError,
    TransportClosedError,
)
from desktop.core.link.channel import (
    DEFAULT_MAX_FRAME,
    Transport,
    TransportFactory,
    check_transport_security,
    redact_url,
)
from desktop.core.link.dialect import Dialect
from desktop.core.link.liveness import (
    HEARTBEAT_DEADLINE,
    HEARTBEAT_INTERVAL,
    Verdict,
    deadline_base,
    verdict,
)
from desktop.core.link.protocol import (
    Event,
    Invalid,
    Reply,
    RequestId,
    ServerRequest,
    decode_frame,
    encode_error,
    encode_reply,
    encode_request,
)
from desktop.core.observers import Observers, Unsubscribe

log = logging.getLogger(__name__)

EventListener = Callable[[Event, int], None]
ClosedListener = Callable[[str, "int | None", int], None]
T = TypeVar("T")

RTT_SAMPLES = 32
# Reply ids remembered after completion so a duplicate reply is told apart from an unknown one.
RECENT_IDS = 256


async def open_websocket(url: str, **options: Any) -> Transport:
    """The real socket: the websockets shell, imported when the first link opens (~20 ms
    that a start would spend before its window shows)."""
    from desktop.core.link.transport import open_websocket as websocket

    return await websocket(url, **options)


def _cancelled_by_caller() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _retrieve(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()


class ClientState(Enum):
    IDLE = "idle"
    CONNECTING = "connecting"
    OPEN = "open"
    CLOSED = "closed"


@dataclass(slots=True)
class ClientStats:
    """Counters of odd input, for diagnostics; none of these ever break the reader."""

    malformed_frames: int = 0
    unknown_reply_ids: int = 0
    duplicate_replies: int = 0
    oversized_frames: int = 0
    binary_frames: int = 0
    listener_errors: int = 0
    stale_frames: int = 0


class _Link:
    """Everything that belongs to one socket generation; dies as a whole."""

    def __init__(self, generation: int, ready: asyncio.Future[Dialect]) -> None:
        self.generation = generation
        self.transport: Transport | None = None
        self.dead = False
        self.ready = ready
        self.pending: dict[int, tuple[asyncio.Future[Any], str]] = {}
        self.opened = False
        self.death = ""
        # The reader and ping tasks: cancelled together when the generation dies.
        self.tasks: set[asyncio.Task[Any]] = set()
        self.heartbeat_timer: TimerHandle | None = None
        self.deadline_timer: TimerHandle | None = None
        self.ping_in_flight = False
        # Raw bytes the transport had received when the last whole frame (or pong) came in, or
        # when the deadline last counted a partial frame as progress. Only bytes beyond this
        # are a large frame still arriving; whole frames already moved the deadline themselves.
        self.bytes_seen = 0
        # clock.monotonic() of the last time the deadline counted such progress.
        self.progress_at: float | None = None

    def cancel_timers(self) -> None:
        for timer in (self.heartbeat_timer, self.deadline_timer):
            if timer is not None:
                timer.cancel()
        self.heartbeat_timer = self.deadline_timer = None


class JsonRpcGatewayClient:
    """Talks JSON-RPC to one gateway URL over successive socket generations.

    The client never reconnects by itself: a supervisor calls `connect()` again after
    `on_closed` reports a death. Every socket gets a new `generation`; anything arriving from an
    older one is dropped.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        heartbeat_interval: float = HEARTBEAT_INTERVAL,
        heartbeat_deadline: float = HEARTBEAT_DEADLINE,
        call_timeout: float = 30.0,
        connect_timeout: float = 15.0,
        max_frame_size: int = DEFAULT_MAX_FRAME,
        clock: Clock | None = None,
        transport_factory: TransportFactory | None = None,
        allow_insecure: bool = False,
        headers: Mapping[str, str] | None = None,
        ssl: ssl_lib.SSLContext | None = None,
    ) -> None:
        self._url = url
        self._token = token
        self._heartbeat_interval = heartbeat_interval
        self._heartbeat_deadline = heartbeat_deadline
        self._call_timeout = call_timeout
        self._connect_timeout = connect_timeout
        self._max_frame_size = max_frame_size
        self._clock: Clock = clock or AsyncioClock()
        self._factory: TransportFactory = transport_factory or open_websocket
        self._allow_insecure = allow_insecure
        self._headers = headers
        self._ssl = ssl
        self._generation = 0
        self._state = ClientState.IDLE
        self._link: _Link | None = None
        self._dialect: Dialect | None = None
        self._last_inbound_at: float | None = None
        self._ids = itertools.count(1)
        self._recent_ids: deque[int] = deque(maxlen=RECENT_IDS)
        self._event_listeners: Observers[EventListener] = Observers("gateway event")
        self._closed_listeners: Observers[ClosedListener] = Observers("gateway closed")
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closing = False
        self.stats = ClientStats()
        self.heartbeat_rtts: deque[float] = deque(maxlen=RTT_SAMPLES)

    # ----- read-only state -------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The gateway URL, safe to log."""
        return redact_url(self._url)

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def state(self) -> ClientState:
        return self._state

    @property
    def dialect(self) -> Dialect | None:
        """What the current (or last) socket's gateway advertised."""
        return self._dialect

    @property
    def last_inbound_at(self) -> float | None:
        """clock.monotonic() of the last frame of any kind (pongs included)."""
        return self._last_inbound_at

    @property
    def is_open(self) -> bool:
        return self._state is ClientState.OPEN

    # ----- listeners -------------------------------------------------------------------------

    def subscribe(self, listener: EventListener) -> Unsubscribe:
        """Call `listener(event, generation)` for every event; returns an unsubscribe callable.

        A listener added while an event is being dispatched hears from the next event on.
        """
        return self._event_listeners.subscribe(listener)

    def on_closed(self, callback: ClosedListener) -> Unsubscribe:
        """Call `callback(reason, code, generation)` once when a generation dies."""
        return self._closed_listeners.subscribe(callback)

    # ----- connect / close -------------------------------------------------------------------

    async def connect(self) -> Dialect:
        """Open a new socket generation and wait for `gateway.ready`; returns its capabilities."""
        if self._closing:
            raise ConnectError("client is closed", retryable=False)
        check_transport_security(self._url, self._token, allow_insecure=self._allow_insecure)
        if self._link is not None and not self._link.dead:
            self.invalidate("replaced by a new connection")
        self._generation += 1
        loop = asyncio.get_running_loop()
        link = _Link(self._generation, loop.create_future())
        # connect() reports failures itself; this only keeps a late one from being logged.
        link.ready.add_done_callback(_retrieve)
        self._link = link
        self._state = ClientState.CONNECTING
        timer = self._clock.call_later(
            self._connect_timeout, lambda: self._on_connect_timeout(link)
        )
        try:
            opener = self._spawn(self._open_transport(), link)
            try:
                transport = await opener
            except asyncio.CancelledError:
                if not link.dead or _cancelled_by_caller():
                    raise
                # Our own invalidation (timeout, close, newer connect) cancelled the opener.
                raise ConnectError(
                    f"connecting to {self.url}: {link.death}", silent=link.death == READY_TIMED_OUT
                ) from None
            if link.dead:
                self._spawn(self._close_quietly(transport))
                raise ConnectError(
                    f"connecting to {self.url}: {link.death}", silent=link.death == READY_TIMED_OUT
                )
            link.transport = transport
            self._last_inbound_at = self._clock.monotonic()
            self._spawn(self._read_loop(link, transport), link)
            caps = await link.ready
            await self._ask_for_server_requests(link, caps)
        except BaseException as exc:
            if link is self._link and not link.dead:
                reason = str(exc) if isinstance(exc, GatewayError) else "connect cancelled"
                self._fail_link(link, reason, None, notify=False)
            raise
        finally:
            timer.cancel()
        if link.dead or link is not self._link:
            raise ConnectError(f"connection to {self.url} closed right after gateway.ready")
        link.opened = True
        self._dialect = caps
        self._state = ClientState.OPEN
        self._arm_deadline(link)
        self._arm_heartbeat(link)
        log.info(
            "gateway %s open (generation %d, heartbeat=%s, protocol=%s)",
            self.url,
            link.generation,
            caps.heartbeat,
            caps.protocol_version,
        )
        return caps

    async def _ask_for_server_requests(self, link: _Link, dialect: Dialect) -> None:
        """Say, on this socket, that we answer the agent's questions as server->client
        requests (Hermes 0.22 sends them only to a socket that said so, and withdraws an
        approval at once otherwise). Done before connect() returns, so before any session is
        reactivated on it. A gateway without the method (-32601) is left as it is."""
        try:
            result = await self._call_on(
                link, CLIENT_CAPABILITIES, {"server_requests": True}, self._connect_timeout
            )
        except RpcError as exc:
            dialect.learn(CLIENT_CAPABILITIES, None, exc.code, exc.message)
            return
        except CallTimeoutError:
            log.info("%s: no answer to %s; going on without", self.url, CLIENT_CAPABILITIES)
            return
        except ConnectionLostError as exc:
            raise ConnectError(f"connecting to {self.url}: {exc.reason}") from exc
        asked = result.get("server_requests") if isinstance(result, dict) else None
        if isinstance(asked, list):
            dialect.server_requests = frozenset(m for m in asked if isinstance(m, str))

    async def reply(self, request_id: RequestId, result: Any) -> None:
        """Answer a server->client request (`ServerRequest.id`) with `result`. No reply comes
        back; a request the gateway still holds after a reconnect is answered by its old id
        from the new socket. NotConnectedError when there is no open socket to send it on."""
        link = self._link
        transport = link.transport if link is not None else None
        if link is None or link.dead or transport is None or not self.is_open:
            raise NotConnectedError("reply to a gateway request: not connected")
        await self._send(link, transport, encode_reply(request_id, result))
        if link.dead:
            raise ConnectionLostError(link.death, generation=link.generation)

    def _on_connect_timeout(self, link: _Link) -> None:
        if link is self._link and not link.dead:
            self._fail_link(link, READY_TIMED_OUT, None, notify=False)

    async def _open_transport(self) -> Transport:
        return await self._factory(
            self._url,
            token=self._token,
            headers=self._headers,
            ssl=self._ssl,
            open_timeout=self._connect_timeout,
            max_frame_size=self._max_frame_size,
            allow_insecure=self._allow_insecure,
        )

    def invalidate(self, reason: str, *, code: int | None = None) -> None:
        """Synchronously kill the current generation: reject its calls, close it in background."""
        link = self._link
        if link is None or link.dead:
            return
        self._fail_link(link, reason, code, notify=True)

    async def close(self) -> None:
        """Close on purpose: no further connects; idempotent; waits for background work."""
        self._closing = True
        self.invalidate("closed by client", code=1000)
        self._state = ClientState.CLOSED
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def _fail_link(self, link: _Link, reason: str, code: int | None, *, notify: bool) -> None:
        link.dead = True
        link.death = reason
        link.cancel_timers()
        if link is self._link:
            self._state = ClientState.CLOSED
        pending = list(link.pending.values())
        link.pending.clear()
        for fut, method in pending:
            if not fut.done():
                fut.set_exception(
                    ConnectionLostError(reason, generation=link.generation, code=code)
                )
            log.debug("call %s rejected: %s", method, reason)
        if not link.ready.done():
            link.ready.set_exception(self._connect_failure(reason, code))
        current = asyncio.current_task()
        for task in list(link.tasks):
            if task is not current:
                task.cancel()
        if link.transport is not None:
            abort = getattr(link.transport, "abort", None)
            if abort is not None:
                # An abandoned socket is torn down at once (the peer sees FIN/RST): waiting
                # for a close handshake on a dead link would keep it "live" for seconds. The
                # teardown must never raise past this point: on_closed below has to run.
                try:
                    abort()
                except Exception as exc:
                    log.warning("tearing down generation %d: %r", link.generation, exc)
            else:
                self._spawn(self._close_quietly(link.transport))
        log.info("gateway %s generation %d closed: %s", self.url, link.generation, reason)
        if notify and link.opened:
            generation = link.generation
            self._closed_listeners.emit(lambda callback: callback(reason, code, generation))

    @staticmethod
    def _connect_failure(reason: str, code: int | None) -> ConnectError:
        if code in AUTH_CLOSE_CODES:
            return AuthError(f"gateway refused the connection: {reason}")
        return ConnectError(
            f"connection lost before gateway.ready: {reason}", silent=reason == READY_TIMED_OUT
        )

    async def _close_quietly(self, transport: Transport) -> None:
        try:
            await transport.close()
        except Exception:
            log.debug("transport close failed", exc_info=True)

    def _spawn(self, coro: Coroutine[Any, Any, T], link: _Link | None = None) -> asyncio.Task[T]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if link is not None:
            link.tasks.add(task)
            task.add_done_callback(link.tasks.discard)
        return task

    # ----- calls -----------------------------------------------------------------------------

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> Any:
        """Send a request and await its result; RpcError for an error reply.

        ConnectionLostError / CallTimeoutError mean the outcome is unknown (it may have run).
        """
        link = self._link
        if link is None or link.dead or self._state is not ClientState.OPEN:
            raise NotConnectedError(f"{method}: not connected")
        dialect = self._dialect
        if dialect is None:
            return await self._call_on(link, method, params, timeout)
        # A refusal teaches this connection's dialect; one that names params we can leave out
        # (refused before it ran: 0.22 names one per refusal) is sent again without them.
        for _ in range(len(params or ()) + 1):
            sent = dialect.fit(method, params)
            try:
                return await self._call_on(link, method, sent, timeout)
            except RpcError as exc:
                stale = link.dead or link is not self._link
                if not dialect.learn(method, sent, exc.code, exc.message) or stale:
                    raise
                log.info(
                    "%s: the gateway refused %s; sent without", method, dialect.rejected[method]
                )
        raise AssertionError("unreachable: every retry drops at least one param")

    async def _call_on(
        self, link: _Link, method: str, params: dict[str, Any] | None, timeout: float | None
    ) -> Any:
        transport = link.transport
        assert transport is not None
        request_id = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        link.pending[request_id] = (fut, method)
        limit = self._call_timeout if timeout is None else timeout

        def on_timeout() -> None:
            if link.pending.pop(request_id, None) is not None and not fut.done():
                self._recent_ids.append(request_id)
                fut.set_exception(CallTimeoutError(f"{method}: no reply within {limit:g} s"))

        timer = self._clock.call_later(limit, on_timeout)
        try:
            # The send runs beside the wait so a write stuck on a dead peer cannot outlive
            # the call's timeout or the generation's invalidation.
            self._spawn(
                self._send(link, transport, encode_request(request_id, method, params)), link
            )
            result = await fut
        finally:
            timer.cancel()
            link.pending.pop(request_id, None)
        if isinstance(result, Reply) and result.error is not None:
            err = result.error
            raise RpcError(err.code, err.message, err.data, method=method)
        return result.result if isinstance(result, Reply) else result

    async def _send(self, link: _Link, transport: Transport, text: str) -> None:
        try:
            await transport.send(text)
        except TransportClosedError as exc:
            self._on_transport_lost(link, exc.reason, exc.code)
        except Exception as exc:  # a broken transport must reject the call, not strand it
            log.warning("transport send failed: %s", exc.__class__.__name__)
            self._on_transport_lost(link, f"send failed: {exc.__class__.__name__}", None)

    # ----- reading ---------------------------------------------------------------------------

    async def _read_loop(self, link: _Link, transport: Transport) -> None:
        # The per-frame path: one clock read, one decode, a type test and the dispatch; the
        # odd cases (binary, oversized, invalid, replies) leave it through _on_other_frame.
        recv = transport.recv
        monotonic = self._clock.monotonic
        max_size = self._max_frame_size
        frame: str | bytes | None = None
        decoded: object = None
        while not link.dead:
            # Let go of the last frame while waiting for the next: kept, a session list of
            # 10,000 chats stayed in memory after it was merged (5 MB, 70,000 objects).
            frame = decoded = None
            try:
                frame = await recv()
            except TransportClosedError as exc:
                if exc.code == CLOSE_TOO_BIG:
                    self.stats.oversized_frames += 1
                self._on_transport_lost(link, exc.reason, exc.code)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a transport that breaks its contract must not hang us
                log.warning("transport receive failed: %s", exc.__class__.__name__)
                self._on_transport_lost(link, f"receive failed: {exc.__class__.__name__}", None)
                return
            if link.dead or link is not self._link:
                self.stats.stale_frames += 1
                return
            self._last_inbound_at = monotonic()
            link.bytes_seen = transport.bytes_received
            try:
                if type(frame) is str and len(frame) <= max_size:
                    decoded = decode_frame(frame)
                    if type(decoded) is Event:
                        self._on_event(link, decoded)
                        continue
                    self._on_decoded(link, decoded)
                else:
                    self._on_odd_frame(frame)
            except Exception as exc:
                # Nothing may end the reader and leave the link looking alive (no frames read,
                # the deadline fed by pongs): the link fails, and the next one re-syncs.
                log.error("a frame could not be handled", exc_info=exc)
                self._on_transport_lost(
                    link, f"a frame could not be handled ({exc.__class__.__name__})", None
                )
                return

    def _on_transport_lost(self, link: _Link, reason: str, code: int | None) -> None:
        if link.dead or link is not self._link:
            return
        self._fail_link(link, reason, code, notify=True)

    def _on_odd_frame(self, frame: str | bytes) -> None:
        if isinstance(frame, bytes):
            self.stats.binary_frames += 1
            log.warning("ignored a binary frame of %d bytes", len(frame))
        else:
            self.stats.oversized_frames += 1
            log.warning("ignored an oversized frame of %d chars", len(frame))

    def _on_decoded(self, link: _Link, decoded: Event | Reply | ServerRequest | Invalid) -> None:
        if isinstance(decoded, Invalid):
            self.stats.malformed_frames += 1
            log.warning("ignored an invalid frame: %s", decoded.reason)
        elif isinstance(decoded, Reply):
            self._on_reply(link, decoded)
        elif isinstance(decoded, ServerRequest):
            if decoded.method not in SERVER_REQUEST_KINDS:
                # Nothing here would ever answer it: say so now rather than let the agent
                # wait for its own timeout.
                log.info("refused a gateway request this app does not answer: %s", decoded.method)
                transport = link.transport
                if transport is not None:
                    refusal = encode_error(
                        decoded.id,
                        METHOD_NOT_FOUND,
                        f"{decoded.method}: not supported by this client",
                    )
                    self._spawn(self._send(link, transport, refusal), link)
                return
            # Routed like a session event (by params.session_id); answered through reply().
            self._on_event(link, decoded.as_event())
        else:
            self._on_event(link, decoded)

    def _on_reply(self, link: _Link, reply: Reply) -> None:
        entry = link.pending.pop(reply.id, None) if isinstance(reply.id, int) else None
        if entry is None:
            if reply.id in self._recent_ids:
                self.stats.duplicate_replies += 1
                log.debug("ignored a duplicate reply for id %r", reply.id)
            else:
                self.stats.unknown_reply_ids += 1
                log.warning("ignored a reply for unknown id %r", reply.id)
            return
        self._recent_ids.append(reply.id)  # type: ignore[arg-type]
        fut, _method = entry
        if not fut.done():
            fut.set_result(reply)

    def _on_event(self, link: _Link, event: Event) -> None:
        if event.type == READY_EVENT and not link.ready.done():
            try:
                link.ready.set_result(Dialect.from_ready(event.payload))
            except GatewayError as exc:
                link.ready.set_exception(exc)
                self._fail_link(link, str(exc), None, notify=False)
                return
        generation = link.generation
        # A listener may kill the link (a bad event): the others then hear nothing more of it.
        self.stats.listener_errors += self._event_listeners.emit(
            lambda listener: listener(event, generation), stop=lambda: link.dead
        )

    # ----- liveness (the rule: core/link/liveness.py) ----------------------------------------

    def _deadline_base(self, link: _Link) -> float:
        return deadline_base(self._last_inbound_at, link.progress_at)

    def _arm_deadline(self, link: _Link) -> None:
        delay = self._deadline_base(link) + self._heartbeat_deadline - self._clock.monotonic()
        link.deadline_timer = self._clock.call_later(delay, lambda: self._on_deadline(link))

    def _on_deadline(self, link: _Link) -> None:
        """The deadline timer fired: `liveness.verdict` says what it means."""
        if link.dead:
            return
        now = self._clock.monotonic()
        received = link.transport.bytes_received if link.transport is not None else 0
        found = verdict(
            now=now,
            base=self._deadline_base(link),
            deadline=self._heartbeat_deadline,
            received=received,
            seen=link.bytes_seen,
        )
        if found is Verdict.DEAD:
            self._fail_link(link, DEADLINE_PASSED, None, notify=True)
            return
        if found is Verdict.PROGRESS:
            link.bytes_seen = received
            link.progress_at = now
        self._arm_deadline(link)  # re-armed lazily for the new deadline

    def _arm_heartbeat(self, link: _Link) -> None:
        if self._heartbeat_interval <= 0:
            return
        link.heartbeat_timer = self._clock.call_later(
            self._heartbeat_interval, lambda: self._on_heartbeat(link)
        )

    def _on_heartbeat(self, link: _Link) -> None:
        if link.dead:
            return
        self._arm_heartbeat(link)
        if link.ping_in_flight:
            return
        link.ping_in_flight = True
        caps = self._dialect
        if caps is not None and caps.heartbeat:
            self._spawn(self._app_ping(link), link)
        else:
            self._spawn(self._protocol_ping(link), link)

    async def _app_ping(self, link: _Link) -> None:
        started = self._clock.monotonic()
        try:
            await self._call_on(link, GATEWAY_PING, {}, self._heartbeat_deadline)
            self.heartbeat_rtts.append(self._clock.monotonic() - started)
        except RpcError:
            self.heartbeat_rtts.append(self._clock.monotonic() - started)
        except GatewayError as exc:
            log.debug("gateway.ping failed: %s", exc)
        finally:
            link.ping_in_flight = False

    async def _protocol_ping(self, link: _Link) -> None:
        transport = link.transport
        assert transport is not None
        try:
            rtt = await transport.ping()
        except TransportClosedError as exc:
            self._on_transport_lost(link, exc.reason, exc.code)
            return
        except Exception as exc:
            log.debug("protocol ping failed: %s", exc.__class__.__name__)
            return
        finally:
            link.ping_in_flight = False
        if link.dead or link is not self._link:
            return
        self._last_inbound_at = self._clock.monotonic()
        link.bytes_seen = transport.bytes_received  # the pong is a whole frame
        self.heartbeat_rtts.append(rtt)
