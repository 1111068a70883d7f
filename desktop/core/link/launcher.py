"""Child-process gateways: the embedded gateway and `hermes serve`, started, watched and stopped."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import secrets
import shutil
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from desktop.core.errors import ConnectError
from desktop.core.link.supervisor import Endpoint

log = logging.getLogger(__name__)

EMBEDDED_READY = re.compile(r"^HERMES_QT_GATEWAY_READY url=(?P<url>wss?://\S+)\s*$")
HERMES_READY = re.compile(r"^HERMES_BACKEND_READY port=(?P<port>\d+)\s*$")
EMBEDDED_TOKEN_ENV = "HERMES_QT_GATEWAY_TOKEN"
HERMES_TOKEN_ENV = "HERMES_DASHBOARD_SESSION_TOKEN"
# Hermes takes a file checkpoint before the agent changes files only when its process has this
# set (`hermes --tui --checkpoints` sets it; `hermes serve` does not): the app sets it for the
# gateways it starts, so a turn that changed files can be restored (rollback.*).
CHECKPOINTS_ENV = "HERMES_TUI_CHECKPOINTS"
LOG_TAIL = 2000
# A child's standard error file is moved aside (one kept) at a start once it is this big.
STDERR_LOG_BYTES = 1_000_000


class LauncherError(ConnectError):
    """The child gateway did not come up (exited, or no ready line in time). Retryable."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, retryable=True)


class LauncherStartError(ConnectError):
    """The gateway program cannot be run at all (missing, not executable, exits at once). Fatal:
    retrying will not install it; the user has to."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, retryable=False)


HERMES_NOT_FOUND = "hermes not found: install hermes-agent or set its path in Settings → Profiles"


def default_hermes_home(env: Mapping[str, str] | None = None) -> Path:
    """The user's own Hermes home: $HERMES_HOME, else ~/.hermes (what `hermes` itself uses)."""
    env = os.environ if env is None else env
    home = env.get("HERMES_HOME", "").strip()
    return Path(home).expanduser() if home else Path.home() / ".hermes"


def hermes_home_for(configured: str) -> Path:
    """The Hermes home a local profile uses: the one it names, else the user's own."""
    return Path(configured).expanduser() if configured.strip() else default_hermes_home()


def find_hermes(configured: str = "", env: Mapping[str, str] | None = None) -> str:
    """The `hermes` executable: the configured path, else the one on PATH; LauncherStartError."""
    env = os.environ if env is None else env
    if configured:
        path = Path(configured).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        raise LauncherStartError(
            f"hermes not found at {path}: install hermes-agent or set its path in Settings"
        )
    found = shutil.which("hermes", path=env.get("PATH"))
    if found is None:
        raise LauncherStartError(HERMES_NOT_FOUND)
    return found


class ProcessLauncher:
    """Runs one gateway child at a time; `endpoint()` (re)starts it when it is not running.

    The child gets its own process group so stopping it (SIGTERM, then SIGKILL after
    `stop_timeout`) also stops anything it spawned. Its stderr goes to `log_path`.
    """

    def __init__(
        self,
        *,
        log_path: Path,
        token: str | None = None,
        ready_timeout: float = 60.0,
        stop_timeout: float = 5.0,
    ) -> None:
        self._log_path = Path(log_path)
        self._token = token or secrets.token_urlsafe(32)
        self._ready_timeout = ready_timeout
        self._stop_timeout = stop_timeout
        self._proc: asyncio.subprocess.Process | None = None
        self._drain: asyncio.Task[None] | None = None
        self._log: IO[bytes] | None = None
        self._url: str | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        self.starts = 0
        # Set when the running child answered nothing in time: the next endpoint() kills it.
        self._hung = ""
        # How the last start failed before its ready line (exit code and last log line): the
        # same failure twice in a row is no fluke, and retrying it forever helps nobody.
        self._last_start_failure: str | None = None

    # A child that exits before its ready line: retried for the embedded gateway (a crash may be
    # a fluke), fatal for programs the user installed (a broken install stays broken).
    exit_before_ready_is_fatal = False

    # -- what subclasses define ----------------------------------------------------------

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def parse_ready(self, line: str) -> str | None:
        """The gateway URL if `line` is the ready line."""
        raise NotImplementedError

    # -- public --------------------------------------------------------------------------

    @property
    def token(self) -> str:
        return self._token

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def endpoint(self) -> Endpoint:
        """Where the child listens, starting or restarting it first if it is not running (or
        was found hung)."""
        async with self._lock:
            if self._closed:
                raise ConnectError("launcher is closed", retryable=False)
            if self._hung and self.running:
                log.warning("gateway child pid %s hangs (%s): restarting it", self.pid, self._hung)
                await self._stop_child(kill=True)
            self._hung = ""
            if not self.running or self._url is None:
                await self._stop_child()
                self._url = await self._start_child()
            return Endpoint(self._url, self._token)

    def unresponsive(self, reason: str) -> None:
        """The running child answered nothing within the liveness deadline (stopped, deadlocked):
        the next endpoint() kills it and starts a new one. A live process that says nothing is
        never reconnected to for ever."""
        if self.running:
            self._hung = reason

    async def wait_exit(self) -> int | None:
        """Wait until the current child exits (crash or stop); its exit code, None if none."""
        proc = self._proc
        return await proc.wait() if proc is not None else None

    async def close(self) -> None:
        """Stop the child (SIGTERM, then SIGKILL) and never start it again."""
        self._closed = True
        async with self._lock:
            await self._stop_child()

    # -- internals -----------------------------------------------------------------------

    async def _start_child(self) -> str:
        command = self.command()
        self._log = self._open_log()
        self.starts += 1
        try:
            proc = await asyncio.create_subprocess_exec(
                *command,
                # Held open for the child's lifetime: a child that watches it sees EOF when we die.
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=self._log,
                env=self.environment(),
                start_new_session=True,
            )
        except OSError as exc:
            raise LauncherStartError(
                f"cannot start {command[0]}: {exc.strerror or type(exc).__name__}"
            ) from exc
        self._proc = proc
        log.info("started gateway child pid %d", proc.pid)
        try:
            url = await asyncio.wait_for(self._read_ready(proc), self._ready_timeout)
        except TimeoutError:
            await self._stop_child()
            raise LauncherError(
                f"gateway gave no ready line within {self._ready_timeout:.0f} s"
            ) from None
        except ConnectError:
            await self._stop_child()
            raise
        # Keep reading stdout so a chatty child never blocks on a full pipe.
        self._drain = asyncio.get_running_loop().create_task(self._drain_stdout(proc))
        self._last_start_failure = None
        return url

    def _open_log(self) -> IO[bytes]:
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            if self._log_path.stat().st_size > STDERR_LOG_BYTES:
                os.replace(self._log_path, self._log_path.with_name(self._log_path.name + ".1"))
        return open(self._log_path, "ab")

    async def _read_ready(self, proc: asyncio.subprocess.Process) -> str:
        assert proc.stdout is not None
        while True:
            raw = await proc.stdout.readline()
            if not raw:
                code = await proc.wait()
                tail = self._tail()
                reason = f"gateway exited with code {code} before ready: {tail}"
                failure = f"{code}:{_last_line(tail)}"
                again = failure == self._last_start_failure
                self._last_start_failure = failure
                if again:
                    raise LauncherStartError(
                        f"the gateway stops at start with the same error each time (exit code "
                        f"{code}): {_last_line(tail)}. Its log: {self._log_path}"
                    )
                if self.exit_before_ready_is_fatal:
                    raise LauncherStartError(reason)
                raise LauncherError(reason)
            url = self.parse_ready(raw.decode("utf-8", "replace").strip())
            if url is not None:
                return url

    @staticmethod
    async def _drain_stdout(proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        while await proc.stdout.read(65536):
            pass

    async def _stop_child(self, *, kill: bool = False) -> None:
        proc, self._proc = self._proc, None
        self._url = None
        try:
            if proc is not None:
                if proc.returncode is None:
                    # A hung child (stopped, deadlocked) cannot act on SIGTERM: SIGKILL at once.
                    self._signal(proc, signal.SIGKILL if kill else signal.SIGTERM)
                    try:
                        await asyncio.wait_for(proc.wait(), self._stop_timeout)
                    except TimeoutError:
                        self._signal(proc, signal.SIGKILL)
                        await proc.wait()
                else:
                    await proc.wait()
                # The group may hold grandchildren that ignored SIGTERM.
                self._signal(proc, signal.SIGKILL)
            drain, self._drain = self._drain, None
            if drain is not None:
                drain.cancel()
                await asyncio.gather(drain, return_exceptions=True)
        finally:
            if self._log is not None:
                self._log.close()
                self._log = None

    @staticmethod
    def _signal(proc: asyncio.subprocess.Process, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)

    def _tail(self) -> str:
        try:
            data = self._log_path.read_bytes()[-LOG_TAIL:].decode("utf-8", "replace")
        except OSError:
            return "(no log)"
        return data.replace(self._token, "***").strip() or "(no output)"


class EmbeddedGatewayLauncher(ProcessLauncher):
    """`python -m desktop.gateway` on loopback with a random token passed by environment."""

    def __init__(
        self,
        data_dir: Path,
        *,
        python: str = sys.executable,
        extra_args: Sequence[str] = (),
        token: str | None = None,
        ready_timeout: float = 60.0,
        stop_timeout: float = 5.0,
    ) -> None:
        # The gateway logs to its own rotating gateway.log; standard error only catches
        # what comes before logging is set up (and a crash's traceback).
        super().__init__(
            log_path=Path(data_dir) / "gateway-stderr.log",
            token=token,
            ready_timeout=ready_timeout,
            stop_timeout=stop_timeout,
        )
        self._data_dir = Path(data_dir)
        self._python = python
        self._extra = list(extra_args)

    def command(self) -> list[str]:
        # A frozen app has no `-m`: it runs its own gateway as the `gateway` subcommand.
        entry = ["gateway"] if getattr(sys, "frozen", False) else ["-m", "desktop.gateway"]
        return [
            self._python,
            *entry,
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--data-dir",
            str(self._data_dir),
            "--exit-with-parent",
            "--log-file",
            str(self._data_dir / "gateway.log"),
            *self._extra,
        ]

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env[EMBEDDED_TOKEN_ENV] = self.token
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def parse_ready(self, line: str) -> str | None:
        match = EMBEDDED_READY.match(line)
        return match.group("url") if match else None


class HermesServeLauncher(ProcessLauncher):
    """`hermes serve --host 127.0.0.1 --port 0` with HERMES_HOME and a session token.

    `hermes` is a path, or "" for the one on PATH (looked up at each start, so installing it
    and pressing Reconnect works). Not finding it, or it not running, is fatal and says so.
    Checkpoints are on (CHECKPOINTS_ENV=1) unless the user's environment says otherwise.
    """

    exit_before_ready_is_fatal = True

    def __init__(
        self,
        hermes_home: Path,
        *,
        hermes: str = "",
        extra_env: dict[str, str] | None = None,
        token: str | None = None,
        ready_timeout: float = 120.0,
        stop_timeout: float = 5.0,
        log_path: Path | None = None,
    ) -> None:
        super().__init__(
            log_path=log_path or Path(hermes_home) / "hermes-qt-launcher.log",
            token=token,
            ready_timeout=ready_timeout,
            stop_timeout=stop_timeout,
        )
        self._home = Path(hermes_home)
        self._hermes = hermes
        self._extra_env = dict(extra_env or {})

    def command(self) -> list[str]:
        hermes = find_hermes(self._hermes, {**os.environ, **self._extra_env})
        return [hermes, "serve", "--host", "127.0.0.1", "--port", "0"]

    def environment(self) -> dict[str, str]:
        env = {CHECKPOINTS_ENV: "1", **os.environ, **self._extra_env}
        env["HERMES_HOME"] = str(self._home)
        env[HERMES_TOKEN_ENV] = self.token
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def parse_ready(self, line: str) -> str | None:
        match = HERMES_READY.match(line)
        return f"ws://127.0.0.1:{match.group('port')}/api/ws" if match else None


def _last_line(text: str) -> str:
    """The last non-empty line of a log tail (where a Python traceback names its error)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else text.strip()
