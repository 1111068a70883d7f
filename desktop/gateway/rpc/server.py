"""The embedded gateway's WebSocket server: listening, auth on the upgrade, routing sockets."""

from __future__ import annotations

import logging
import ssl
import uuid
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from urllib.parse import urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response

from desktop.common.clock import AsyncioClock, Clock
from desktop.common.hosts import is_loopback_host
from desktop.common.limits import MAX_FRAME_BYTES
from desktop.gateway.providers.base import Provider
from desktop.gateway.rpc.auth import request_token, token_matches
from desktop.gateway.rpc.connection import SEND_QUEUE_BYTES, SEND_QUEUE_LIMIT, Connection
from desktop.gateway.rpc.methods import Methods, ready_payload
from desktop.gateway.sessions.hub import HEARTBEAT_DEADLINE, IDLE_SESSION_TIMEOUT, SessionHub
from desktop.gateway.sessions.spool import DEFAULT_QUOTA_BYTES, DEFAULT_TTL, AttachmentSpool
from desktop.gateway.sessions.store import Store

log = logging.getLogger(__name__)

WS_PATH = "/api/ws"
# Inbound limit: a prompt at the cap (frames.prompt_cap) fits with room to spare.
MAX_FRAME = 16 * 1024 * 1024


class ConfigError(Exception):
    """The gateway refuses to start with these settings (e.g. a remote bind without TLS)."""


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    data_dir: Path
    token: str
    host: str = "127.0.0.1"
    port: int = 0
    allow_remote: bool = False
    tls_cert: Path | None = None
    tls_key: Path | None = None
    debug: bool = False
    heartbeat_deadline: float = HEARTBEAT_DEADLINE
    send_queue_limit: int = SEND_QUEUE_LIMIT
    send_queue_bytes: int = SEND_QUEUE_BYTES
    coalesce_interval: float = 0.033
    replay_limit: int = 2000
    ping_interval: float | None = 20.0
    idle_session_timeout: float = IDLE_SESSION_TIMEOUT
    staged_quota_bytes: int = DEFAULT_QUOTA_BYTES
    staged_ttl: float = DEFAULT_TTL
    # Outbound limit: never above what the client accepts (both default to MAX_FRAME_BYTES).
    max_frame: int = MAX_FRAME_BYTES

    def tls_context(self) -> ssl.SSLContext | None:
        """Validate the bind policy; a non-loopback host needs --allow-remote and TLS."""
        if is_loopback_host(self.host):
            if self.tls_cert is None:
                return None
        elif not self.allow_remote:
            raise ConfigError(f"refusing to bind {self.host}: not loopback (pass --allow-remote)")
        elif self.tls_cert is None or self.tls_key is None:
            raise ConfigError("a non-loopback bind needs --tls-cert and --tls-key")
        if self.tls_cert is None or self.tls_key is None:
            raise ConfigError("--tls-cert and --tls-key go together")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.tls_cert, self.tls_key)
        return ctx


class GatewayServer:
    """Start with `await start()`, read `url`, stop with `await stop()` (idempotent)."""

    def __init__(self, config: GatewayConfig, provider: Provider, clock: Clock | None = None):
        self.config = config
        self.epoch = str(uuid.uuid4())
        self.clock = clock or AsyncioClock()
        self._tls = config.tls_context()
        self.store = Store(config.data_dir / "gateway.sqlite3")
        self.store.prune_submissions(self.clock.wall())
        self.spool = AttachmentSpool(
            config.data_dir / "attachments",
            wall=self.clock.wall,
            quota_bytes=config.staged_quota_bytes,
            ttl=config.staged_ttl,
        )
        self.spool.sweep(())
        self.hub = SessionHub(
            self.store,
            provider,
            self.clock,
            self.spool,
            epoch=self.epoch,
            heartbeat_deadline=config.heartbeat_deadline,
            replay_limit=config.replay_limit,
            coalesce_interval=config.coalesce_interval,
            idle_timeout=config.idle_session_timeout,
            max_frame=config.max_frame,
        )
        self.methods = Methods(self.hub, debug=config.debug)
        self._server: Server | None = None
        self._stopped = False
        self.url = ""

    async def start(self) -> str:
        self._server = await serve(
            self._handle,
            self.config.host,
            self.config.port,
            ssl=self._tls,
            process_request=self._process_request,
            max_size=MAX_FRAME,
            ping_interval=self.config.ping_interval,
            compression=None,
            server_header=None,
        )
        port = self._server.sockets[0].getsockname()[1]
        scheme = "wss" if self._tls else "ws"
        host = self.config.host if ":" not in self.config.host else f"[{self.config.host}]"
        self.url = f"{scheme}://{host}:{port}{WS_PATH}"
        log.info("gateway listening on %s", self.url)
        return self.url

    async def stop(self) -> None:
        """Stop accepting, interrupt turns (they persist), close sockets with 1001, close the DB."""
        if self._stopped:
            return
        self._stopped = True
        if self._server is not None:
            self._server.server.close()  # stop accepting; open sockets stay for now
        await self.hub.shutdown()
        if self._server is not None:
            self._server.close(close_connections=True)
            await self._server.wait_closed()
        self.store.close()

    def _process_request(self, conn: ServerConnection, request: Request) -> Response | None:
        if urlsplit(request.path).path != WS_PATH:
            return conn.respond(HTTPStatus.NOT_FOUND, "not found\n")
        presented = request_token(request.path, request.headers.get("Authorization"))
        if not token_matches(presented, self.config.token):
            log.warning("refused a socket with a missing or wrong token")
            return conn.respond(HTTPStatus.FORBIDDEN, "forbidden\n")
        return None

    async def _handle(self, ws: ServerConnection) -> None:
        connection = Connection(
            ws,
            self.hub,
            self.methods,
            self.clock,
            queue_limit=self.config.send_queue_limit,
            queue_bytes=self.config.send_queue_bytes,
            max_frame=self.config.max_frame,
        )
        await connection.serve(ready_payload(self.epoch, self.methods.names()))
