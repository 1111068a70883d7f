"""Command line of the embedded gateway: `hermes-qt-gateway` / `python -m desktop.gateway`."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import signal
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path

from desktop.common import dirs
from desktop.gateway.lock import DataDirInUse, DataDirLock
from desktop.gateway.providers.base import Provider
from desktop.gateway.rpc.auth import TOKEN_ENV, load_or_create_token
from desktop.gateway.rpc.server import ConfigError, GatewayConfig, GatewayServer
from desktop.gateway.sessions.hub import IDLE_SESSION_TIMEOUT
from desktop.gateway.sessions.spool import DEFAULT_QUOTA_BYTES, DEFAULT_TTL

log = logging.getLogger("desktop.gateway")
READY_PREFIX = "HERMES_QT_GATEWAY_READY"
LOG_BYTES = 1_000_000
LOG_BACKUPS = 3
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
EXIT_DATA_DIR_IN_USE = 3
# Started by the app: the gateway it replaces (after the app was killed) may still be stopping.
LOCK_WAIT_WITH_PARENT = 10.0


def _data_dir(args: argparse.Namespace) -> Path:
    # The app's embedded gateway keeps its files in <data>/gateway (see desktop/app/main.py).
    return args.data_dir or dirs.user_data_dir() / "gateway"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hermes-qt-gateway", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--config-dir", type=Path, default=None)
    p.add_argument("--token-file", type=Path, default=None)
    p.add_argument("--allow-remote", action="store_true")
    p.add_argument("--tls-cert", type=Path, default=None)
    p.add_argument("--tls-key", type=Path, default=None)
    p.add_argument("--debug", action="store_true", help="enable debug.stats and debug logging")
    p.add_argument(
        "--log-file",
        type=Path,
        default=None,
        help="log here (rotated at 1 MB, 3 kept) instead of to standard error",
    )
    p.add_argument(
        "--idle-session-timeout",
        type=float,
        default=IDLE_SESSION_TIMEOUT,
        help="seconds an unowned, idle session stays in memory (it stays resumable); 0: forever",
    )
    p.add_argument(
        "--staged-quota-mb",
        type=float,
        default=DEFAULT_QUOTA_BYTES / 2**20,
        help="disk space for attachments staged but not yet sent",
    )
    p.add_argument(
        "--staged-ttl",
        type=float,
        default=DEFAULT_TTL,
        help="seconds after which staged attachments of a session nobody uses are deleted",
    )
    # For tests: rotate the log file at this size instead of 1 MB.
    p.add_argument("--log-bytes", type=int, default=LOG_BYTES, help=argparse.SUPPRESS)
    p.add_argument(
        "--exit-with-parent",
        action="store_true",
        help="stop when standard input closes (the app that started this gateway has gone)",
    )
    # For tests and development: `module:callable` returning a Provider, instead of the config.
    p.add_argument("--provider", default=None, help=argparse.SUPPRESS)
    # For tests: a smaller outbound frame limit, so a history "larger than a frame" stays small.
    p.add_argument("--max-frame", type=int, default=None, help=argparse.SUPPRESS)
    return p


def _load_provider(spec: str | None, config_dir: Path) -> Provider:
    if spec:
        module, _, attr = spec.partition(":")
        factory = getattr(importlib.import_module(module), attr)
        provider: Provider = factory()
        return provider
    from desktop.gateway.providers.registry import ConfigWatchingProvider

    return ConfigWatchingProvider(config_dir)


def _token(args: argparse.Namespace, data_dir: Path) -> str:
    env = os.environ.get(TOKEN_ENV, "").strip()
    if env:
        return env
    token_file = args.token_file or data_dir / "token"
    token, created = load_or_create_token(token_file)
    verb = "generated a token in" if created else "using the token in"
    log.info("%s %s", verb, token_file)
    return token


async def _watch_parent(stop: asyncio.Event) -> None:
    """The parent holds our stdin open; EOF means it exited (even by kill -9): stop cleanly."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while await reader.read(4096):
        pass
    log.info("the app that started this gateway has exited")
    stop.set()


async def serve(args: argparse.Namespace) -> int:
    data_dir = _data_dir(args)
    config_dir: Path = args.config_dir or dirs.user_config_dir()
    config = GatewayConfig(
        data_dir=data_dir,
        token=_token(args, data_dir),
        host=args.host,
        port=args.port,
        allow_remote=args.allow_remote,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        debug=args.debug,
        idle_session_timeout=args.idle_session_timeout,
        staged_quota_bytes=int(args.staged_quota_mb * 2**20),
        staged_ttl=args.staged_ttl,
        **({"max_frame": args.max_frame} if args.max_frame else {}),
    )
    config.tls_context()  # refuse a bad bind policy before loading any provider
    provider = _load_provider(args.provider, config_dir)
    server = GatewayServer(config, provider)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    watcher = loop.create_task(_watch_parent(stop)) if args.exit_with_parent else None
    try:
        url = await server.start()
        print(f"{READY_PREFIX} url={url}", flush=True)
        await stop.wait()
        log.info("stopping")
    finally:
        if watcher is not None:
            watcher.cancel()
        await server.stop()
        await provider.aclose()
    return 0


def _configure_logging(args: argparse.Namespace) -> None:
    handler: logging.Handler
    if args.log_file is not None:
        args.log_file.parent.mkdir(parents=True, exist_ok=True)
        handler = RotatingFileHandler(
            args.log_file, maxBytes=args.log_bytes, backupCount=LOG_BACKUPS, encoding="utf-8"
        )
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO, handlers=[handler])
    # The request line carries `?token=`: keep the library's handshake logs out.
    logging.getLogger("websockets").setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _configure_logging(args)
    lock = DataDirLock(_data_dir(args))
    try:
        lock.acquire(wait=LOCK_WAIT_WITH_PARENT if args.exit_with_parent else 0.0)
    except DataDirInUse as exc:
        print(f"hermes-qt-gateway: {exc}", file=sys.stderr)
        return EXIT_DATA_DIR_IN_USE
    except OSError as exc:
        print(f"hermes-qt-gateway: cannot lock the data dir: {exc}", file=sys.stderr)
        return 1
    try:
        return asyncio.run(serve(args))
    except ConfigError as exc:
        print(f"hermes-qt-gateway: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"hermes-qt-gateway: cannot start: {exc}", file=sys.stderr)
        return 1
    finally:
        lock.release()
