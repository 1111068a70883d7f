"""One app per data dir: a second launch raises the first and exits; a kill -9 leaves no block."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from desktop.app.single_instance import SingleInstance, ask_running_instance, socket_path
from tests.reliability.rig import until

# Real app processes: slower than most tests on a busy machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
ROOT = Path(__file__).resolve().parents[2]


def app_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HERMES_QT_BENCH_STARTUP": "1"}
    env["PYTHONPATH"] = str(ROOT)
    return {**env, **extra}


@contextmanager
def running_app(root: Path, **env: str) -> Iterator[subprocess.Popen[str]]:
    """The real app on `root` (with `env` added), returned once its embedded profile is online."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "desktop", "--data-dir", str(root)],
        cwd=ROOT,
        env=app_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # blocks until the app prints ONLINE (or exits)
            if line.startswith("ONLINE"):
                break
        else:
            raise AssertionError(f"the app exited with {proc.wait()} before going online")
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def launch_again(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "desktop", "--data-dir", str(root)],
        cwd=ROOT,
        env=app_env(),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def gateway_starts(root: Path) -> int:
    log = root / "data" / "gateway" / "gateway.log"
    return log.read_text().count("gateway listening on") if log.exists() else 0


def gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


async def test_second_launch_raises_the_first_and_starts_no_gateway(tmp_path: Path) -> None:
    root = tmp_path / "app"
    app_log = root / "state" / "logs" / "hermes-qt.log"
    with running_app(root) as first:
        second = launch_again(root)
        assert second.returncode == 0, second.stderr
        assert "already running" in second.stdout and "raised its window" in second.stdout
        # The first app heard it (its log file gets the app's `desktop.*` loggers).
        await until(lambda: "a second launch on this data dir" in app_log.read_text(), "raise")
        assert gateway_starts(root) == 1
        gateway_pid = int(re.findall(r"started gateway child pid (\d+)", app_log.read_text())[0])
        first.send_signal(signal.SIGKILL)  # leaves its lock file and its local socket behind
        first.wait()
        await until(lambda: gone(gateway_pid), "the orphaned gateway to notice and stop")
    with running_app(root) as third:  # a stale lock does not block a new start
        assert third.poll() is None
        assert gateway_starts(root) == 2


def test_a_second_claim_names_the_pid_that_holds_the_data_dir(qapp: Any, tmp_path: Path) -> None:
    """What a second launch that got no answer prints: the holder's pid (PySide6 6.10 and 6.11
    return the lock's owner in different shapes; reading it used to raise on 6.11)."""
    first = SingleInstance(tmp_path)
    assert first.claim()
    second = SingleInstance(tmp_path)
    try:
        assert not second.claim()
        assert second.owner_pid() == os.getpid()
    finally:
        first.release()
        second.release()


def test_a_second_launch_rings_the_first_over_its_socket(qtbot: Any, tmp_path: Path) -> None:
    """What the second launch does, in one process: the first hears it and raises its window."""
    first = SingleInstance(tmp_path)
    assert first.claim()
    try:
        with qtbot.wait_signal(first.activation_requested, timeout=5000):
            assert ask_running_instance(tmp_path)
        mode = os.stat(socket_path(tmp_path)).st_mode & 0o777
        assert mode == 0o600, oct(mode)  # no other user can ring it
    finally:
        first.release()
    assert not os.path.exists(socket_path(tmp_path))
    assert not ask_running_instance(tmp_path)  # nobody listens any more


def test_the_socket_a_killed_app_left_does_not_stop_the_next_one(qapp: Any, tmp_path: Path) -> None:
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(socket_path(tmp_path))  # bound, never listening: what SIGKILL leaves
    stale.close()
    app = SingleInstance(tmp_path)
    try:
        assert app.claim()
        assert ask_running_instance(tmp_path)
    finally:
        app.release()


def test_the_app_starts_without_qtnetwork(tmp_path: Path) -> None:
    """Qt's network module (~2.7 MB resident) is not loaded for a loopback gateway."""
    probe = (
        "import sys\n"
        "import desktop.app.main as m\n"
        "async def probe(app, loop, paths, instance, running, *, self_test):\n"
        "    import desktop.ui.window.main_window\n"
        "    print('QTNETWORK', 'PySide6.QtNetwork' in sys.modules)\n"
        "    return 0\n"
        "m._run_window = probe\n"
        "sys.exit(m.main(['--data-dir', sys.argv[1]]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "app")],
        capture_output=True,
        text=True,
        env=app_env(),
        timeout=120,
        check=True,
    )
    assert "QTNETWORK False" in out.stdout, out.stdout + out.stderr
