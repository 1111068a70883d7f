"""Gateway launchers: ready line, token by environment, restart after a crash, clean stop."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from desktop.common.clock import ManualClock
from desktop.core.link.epochs import MemoryEpochStore
from desktop.core.link.launcher import (
    EmbeddedGatewayLauncher,
    HermesServeLauncher,
    LauncherError,
    default_hermes_home,
    hermes_home_for,
)
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.link.supervisor import ConnectionSupervisor
from desktop.core.models import ConnectionState
from tests.core.supervisor_fakes import FakeNet, until
from tests.support.waiting import wait_notified

# A stand-in gateway: records its environment token, prints noise then the ready line, waits.
CHILD = r"""
import os, signal, sys, time
mode, token_file = sys.argv[1], sys.argv[2]
with open(token_file, "w") as fh:
    fh.write(os.environ.get("HERMES_QT_GATEWAY_TOKEN", ""))
if mode == "die":
    print("boom " + os.environ.get("HERMES_QT_GATEWAY_TOKEN", ""), file=sys.stderr, flush=True)
    sys.exit(3)
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("starting up", flush=True)
print("HERMES_QT_GATEWAY_READY url=ws://127.0.0.1:%d/api/ws" % (20000 + os.getpid() % 20000),
      flush=True)
while True:
    signal.pause()  # until the launcher stops us
"""


class ScriptLauncher(EmbeddedGatewayLauncher):
    def __init__(self, data_dir: Path, mode: str = "ok", **kw: float) -> None:
        super().__init__(data_dir, **kw)  # type: ignore[arg-type]
        self.mode = mode
        self.token_file = data_dir / "seen-token"

    def command(self) -> list[str]:
        return [sys.executable, "-c", CHILD, self.mode, str(self.token_file)]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_embedded_command_line_and_ready_parsing(data_dir: Path) -> None:
    launcher = EmbeddedGatewayLauncher(data_dir, python="/py")
    assert launcher.command() == [
        "/py", "-m", "desktop.gateway", "--host", "127.0.0.1", "--port", "0",
        "--data-dir", str(data_dir), "--exit-with-parent",
        "--log-file", str(data_dir / "gateway.log"),
    ]  # fmt: skip
    env = launcher.environment()
    assert env["HERMES_QT_GATEWAY_TOKEN"] == launcher.token and len(launcher.token) >= 32
    ready = "HERMES_QT_GATEWAY_READY url=ws://127.0.0.1:4242/api/ws"
    assert launcher.parse_ready(ready) == "ws://127.0.0.1:4242/api/ws"
    assert launcher.parse_ready("HERMES_QT_GATEWAY_READY") is None


def fake_hermes(directory: Path, script: str = "exit 0") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / "hermes"
    exe.write_text(f"#!/bin/sh\n{script}\n")
    exe.chmod(0o755)
    return exe


def test_hermes_serve_command_env_and_ready_parsing(tmp_path: Path) -> None:
    exe = fake_hermes(tmp_path / "bin")
    launcher = HermesServeLauncher(tmp_path, hermes=str(exe), token="tok")
    assert launcher.command() == [str(exe), "serve", "--host", "127.0.0.1", "--port", "0"]
    env = launcher.environment()
    assert env["HERMES_HOME"] == str(tmp_path)
    assert env["HERMES_DASHBOARD_SESSION_TOKEN"] == "tok"
    assert launcher.parse_ready("HERMES_BACKEND_READY port=8123") == "ws://127.0.0.1:8123/api/ws"
    assert launcher.parse_ready("INFO: Uvicorn running") is None


def test_hermes_serve_takes_file_checkpoints_unless_the_user_said_no(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without HERMES_TUI_CHECKPOINTS=1 Hermes never checkpoints, so no turn can be restored."""
    exe = fake_hermes(tmp_path / "bin")
    monkeypatch.delenv("HERMES_TUI_CHECKPOINTS", raising=False)
    assert (
        HermesServeLauncher(tmp_path, hermes=str(exe)).environment()["HERMES_TUI_CHECKPOINTS"]
        == "1"
    )
    monkeypatch.setenv("HERMES_TUI_CHECKPOINTS", "0")
    assert (
        HermesServeLauncher(tmp_path, hermes=str(exe)).environment()["HERMES_TUI_CHECKPOINTS"]
        == "0"
    )


async def test_start_passes_token_by_env_and_close_stops_the_child(data_dir: Path) -> None:
    launcher = ScriptLauncher(data_dir)
    endpoint = await launcher.endpoint()
    pid = launcher.pid
    assert pid is not None and launcher.running
    assert endpoint.url.startswith("ws://127.0.0.1:") and endpoint.token == launcher.token
    assert launcher.token_file.read_text() == launcher.token
    assert launcher.token not in repr(endpoint)
    again = await launcher.endpoint()
    assert again == endpoint and launcher.starts == 1  # a live child is reused
    await launcher.close()
    assert gone(pid) and not launcher.running
    with pytest.raises(Exception, match="closed"):
        await launcher.endpoint()


async def test_a_dead_child_is_restarted_on_the_next_endpoint(data_dir: Path) -> None:
    launcher = ScriptLauncher(data_dir)
    await launcher.endpoint()
    first = launcher.pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    assert await launcher.wait_exit() == -signal.SIGKILL
    await launcher.endpoint()
    assert launcher.starts == 2 and launcher.pid != first and launcher.running
    await launcher.close()


async def test_child_exiting_before_ready_is_a_retryable_error_without_the_token(
    data_dir: Path,
) -> None:
    launcher = ScriptLauncher(data_dir, mode="die")
    with pytest.raises(LauncherError) as info:
        await launcher.endpoint()
    assert info.value.is_retryable()
    assert "code 3" in str(info.value) and "boom ***" in str(info.value)
    assert launcher.token not in str(info.value)
    await launcher.close()


async def test_a_big_stderr_file_is_moved_aside_at_the_next_start(data_dir: Path) -> None:
    stderr_log = data_dir / "gateway-stderr.log"
    stderr_log.write_bytes(b"old crash trace\n" * 70_000)  # about 1.1 MB
    launcher = ScriptLauncher(data_dir, mode="die")
    with pytest.raises(LauncherError) as info:
        await launcher.endpoint()
    await launcher.close()
    assert "boom ***" in str(info.value)  # the new start's own output, not the old trace
    assert (data_dir / "gateway-stderr.log.1").read_bytes().startswith(b"old crash trace")
    assert stderr_log.stat().st_size < 1000


async def test_child_ignoring_sigterm_is_killed(data_dir: Path) -> None:
    launcher = ScriptLauncher(data_dir, mode="stubborn", stop_timeout=0.3)
    await launcher.endpoint()
    pid = launcher.pid
    assert pid is not None
    await launcher.close()
    assert gone(pid)


async def wait_online(sup: ConnectionSupervisor, net: FakeNet, clients: int) -> None:
    """Wait (event-driven, bounded) until the supervisor is online on its `clients`-th client."""
    reached = asyncio.Event()

    def check(_: object = None) -> None:
        if sup.status.state is ConnectionState.ONLINE and len(net.clients) >= clients:
            reached.set()

    unsubscribe = sup.add_status_listener(check)
    try:
        check()
        await asyncio.wait_for(reached.wait(), 30)
    finally:
        unsubscribe()


async def test_supervisor_asks_the_launcher_for_a_fresh_url_after_a_crash(data_dir: Path) -> None:
    launcher = ScriptLauncher(data_dir)
    net = FakeNet()
    profile = Profile(id="emb", name="Embedded", kind=ProfileKind.EMBEDDED)
    clock = ManualClock()
    sup = ConnectionSupervisor(
        profile,
        client_factory=net.factory,
        epoch_store=MemoryEpochStore(),
        clock=clock,
        random=lambda: 0.0,
        launcher=launcher,
    )
    sup.start()
    await wait_online(sup, net, 1)
    first_pid = launcher.pid
    assert first_pid is not None
    assert net.clients[-1].endpoint.token == launcher.token
    os.kill(first_pid, signal.SIGKILL)
    await launcher.wait_exit()
    net.clients[-1].drop("connection refused")
    await until(lambda: sup.status.state is ConnectionState.RECONNECTING, "backoff")
    clock.advance(1.0)
    await wait_online(sup, net, 2)
    assert launcher.starts == 2 and launcher.pid != first_pid
    await sup.close()  # closes the launcher too
    assert not launcher.running and gone(first_pid)


# An app that starts the embedded gateway, says its pid, and waits to be killed.
_APP = """
import asyncio, sys
from pathlib import Path
from desktop.core.link.launcher import EmbeddedGatewayLauncher

async def main():
    launcher = EmbeddedGatewayLauncher(Path(sys.argv[1]), ready_timeout=30.0)
    await launcher.endpoint()
    print(launcher.pid, flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


async def test_the_real_gateway_stops_when_the_app_that_started_it_dies(data_dir: Path) -> None:
    """kill -9 of the app closes the child's stdin; the gateway must not linger as an orphan."""
    app = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _APP, str(data_dir), stdout=asyncio.subprocess.PIPE
    )
    assert app.stdout is not None
    pid = int(await asyncio.wait_for(app.stdout.readline(), 60.0))
    assert not gone(pid)
    app.kill()
    await app.wait()
    try:
        async with asyncio.timeout(20.0):  # not our child: polled, as nothing notifies its end
            while not gone(pid):
                await asyncio.sleep(0.05)
    finally:
        if not gone(pid):
            os.killpg(pid, signal.SIGKILL)  # failed: leave no orphan behind
    log = (data_dir / "gateway.log").read_text("utf-8")
    assert "the app that started this gateway has exited" in log, "it stopped by itself, cleanly"


def test_local_hermes_uses_the_users_hermes_home_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert default_hermes_home({"HERMES_HOME": "/srv/hermes"}) == Path("/srv/hermes")
    monkeypatch.setenv("HOME", "/home/ana")
    assert default_hermes_home({}) == Path("/home/ana/.hermes")
    monkeypatch.delenv("HERMES_HOME", raising=False)
    assert hermes_home_for("") == Path("/home/ana/.hermes")
    assert hermes_home_for("~/work-hermes") == Path("/home/ana/work-hermes"), "per profile"


async def hermes_failure(tmp_path: Path, **launcher_args: str) -> str:
    """A local Hermes profile whose launcher cannot start: the reason it shows once FAILED."""
    launcher = HermesServeLauncher(
        tmp_path / "home", log_path=tmp_path / "serve.log", **launcher_args
    )  # type: ignore[arg-type]
    net = FakeNet()
    sup = ConnectionSupervisor(
        Profile(id="hermes", name="Hermes", kind=ProfileKind.LOCAL_HERMES),
        client_factory=net.factory,
        epoch_store=MemoryEpochStore(),
        clock=ManualClock(),  # never advanced: a retry would wait here forever
        launcher=launcher,
    )
    sup.start()
    failed = lambda: sup.status.state is ConnectionState.FAILED  # noqa: E731
    await wait_notified(failed, [sup.add_status_listener], "failed", timeout=30)
    assert not net.clients, "nothing to connect to"
    reason = sup.status.reason
    await sup.close()
    return reason


async def test_hermes_missing_from_path_is_fatal_and_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    reason = await hermes_failure(tmp_path)
    assert reason == (
        "hermes not found: install hermes-agent or set its path in Settings → Profiles"
    )


async def test_a_configured_hermes_that_is_missing_or_dies_at_once_is_fatal(
    tmp_path: Path,
) -> None:
    reason = await hermes_failure(tmp_path, hermes=str(tmp_path / "nowhere" / "hermes"))
    assert "hermes not found at" in reason
    broken = fake_hermes(tmp_path / "bin", "echo 'No module named hermes_cli' >&2; exit 1")
    reason = await hermes_failure(tmp_path, hermes=str(broken))
    assert "exited with code 1" in reason and "No module named hermes_cli" in reason
