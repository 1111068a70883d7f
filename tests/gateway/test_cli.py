"""The gateway as a process: ready line, kill -9 mid-turn then restart, SIGTERM, bind policy."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from desktop.gateway.cli import main
from desktop.gateway.sessions.store import Store
from tests.gateway.wsclient import TOKEN, client
from tests.support.gateway_process import (
    PROVIDER,
    ROOT,
    gateway_command,
    gateway_env,
    gateway_process,
)


async def test_kill_9_mid_turn_then_restart_repairs_the_session(data_dir: Path) -> None:
    with gateway_process(data_dir) as (proc, url):
        async with client(url) as c:
            created = await c.call("session.create")
            sid, key = created["session_id"], created["stored_session_id"]
            await c.call("prompt.submit", session_id=sid, text="please block")
            await c.wait_event("message.delta", sid)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            await c.closed.wait()
    with gateway_process(data_dir) as (_proc, url):
        async with client(url) as c:
            snap = await c.call("session.resume", session_id=key)
            assert snap["running"] is False and snap["status"] == "idle"
            assert "inflight" not in snap
            assert snap["messages"][0]["text"] == "please block"
            assert snap["messages"][-1]["status"] == "interrupted"
            new_sid = snap["session_id"]
            await c.call("prompt.submit", session_id=new_sid, text="hello again")
            done = await c.wait_event("message.complete", new_sid)
            assert done["payload"]["text"] == "partial answer to: hello again"


async def test_sigterm_persists_the_running_turn_as_interrupted(data_dir: Path) -> None:
    with gateway_process(data_dir) as (proc, url):
        async with client(url) as c:
            created = await c.call("session.create")
            sid, key = created["session_id"], created["stored_session_id"]
            await c.call("prompt.submit", session_id=sid, text="block until stopped")
            await c.wait_event("message.delta", sid)
            proc.send_signal(signal.SIGTERM)
            done = await c.wait_event("message.complete", sid)
            await c.closed.wait()
            assert c.ws.close_code == 1001
        assert proc.wait() == 0
        assert proc.stdout is not None
        assert proc.stdout.read() == ""  # exactly one line on stdout, ever
    assert done["payload"]["status"] == "interrupted"
    store = Store(data_dir / "gateway.sqlite3")
    try:
        rows = store.messages(key)
        assert [(r.role, r.text, r.status) for r in rows] == [
            ("user", "block until stopped", "complete"),
            ("assistant", "partial answer", "interrupted"),
        ]
        session = store.get_session(key)
        assert session is not None and session.running_epoch is None
    finally:
        store.close()
    log = (data_dir / "stderr.log").read_text()
    assert TOKEN not in log


def test_non_loopback_bind_is_refused_without_allow_remote_and_tls(
    data_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_QT_GATEWAY_TOKEN", TOKEN)
    base = ["--data-dir", str(data_dir), "--provider", PROVIDER]
    assert main([*base, "--host", "0.0.0.0"]) == 2
    assert "--allow-remote" in capsys.readouterr().err
    assert main([*base, "--host", "0.0.0.0", "--allow-remote"]) == 2
    assert "--tls-cert" in capsys.readouterr().err


def test_a_second_gateway_on_a_data_dir_in_use_exits_with_a_clear_error(data_dir: Path) -> None:
    with gateway_process(data_dir) as (first, _url):
        second = subprocess.run(
            gateway_command(data_dir),
            cwd=ROOT,
            env=gateway_env(),
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        assert second.returncode == 3
        assert second.stdout == ""  # never a ready line: nothing could connect to it
        assert "another gateway is already using" in second.stderr
        assert str(first.pid) in second.stderr and str(data_dir) in second.stderr
        first.send_signal(signal.SIGKILL)  # a lock left by kill -9 must not block the next
        first.wait()
    with gateway_process(data_dir) as (_proc, url):
        assert url.startswith("ws://127.0.0.1:")


async def test_gateway_log_file_rotates(data_dir: Path) -> None:
    log_file = data_dir / "logs" / "gateway.log"
    with gateway_process(data_dir, "--log-file", str(log_file), "--log-bytes", "600") as (_p, url):
        for _ in range(20):  # each refused socket logs one warning line
            try:
                async with client(url, token="wrong-token"):
                    pass
            except Exception as exc:  # the refusal itself is what we want
                assert "403" in str(exc)
    names = sorted(p.name for p in log_file.parent.iterdir())
    assert names == ["gateway.log", "gateway.log.1", "gateway.log.2", "gateway.log.3"]
    for path in log_file.parent.iterdir():
        assert path.stat().st_size <= 600 + 200  # one line may cross the limit
    assert "refused a socket" in (log_file.parent / "gateway.log.1").read_text()
    assert "wrong-token" not in "".join(p.read_text() for p in log_file.parent.iterdir())


def test_a_gateway_the_app_starts_waits_for_its_predecessor_to_stop(data_dir: Path) -> None:
    """After the app was killed its orphaned gateway may still be stopping: wait, then serve."""
    env = gateway_env()
    cmd = gateway_command(data_dir, "--exit-with-parent")
    first = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    procs = [first]
    try:
        assert first.stdout is not None and first.stdout.readline().startswith(b"HERMES_QT")
        second = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        procs.append(second)
        assert second.stderr is not None and second.stdout is not None
        for line in second.stderr:  # blocks until it reports waiting (or exits)
            if b"still locked: waiting" in line:
                break
        else:
            raise AssertionError(f"the second gateway exited with {second.wait()} at once")
        assert first.stdin is not None
        first.stdin.close()  # its app has gone: it stops and frees the data dir
        assert second.stdout.readline().startswith(b"HERMES_QT_GATEWAY_READY url=")
        assert first.wait(20) == 0
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
