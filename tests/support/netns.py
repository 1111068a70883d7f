"""A real kernel blackhole: the embedded gateway in a network namespace behind a veth pair.

    with GatewayNetns(tmp_path) as ns:     # skips only when not root / no `ip` / no netns;
                                            # a gateway failing to start there fails (stderr)
        url = ns.url                        # ws://10.231.X.2:PORT/api/ws (non-loopback)
        ns.blackhole()                      # `ip link set <veth> down`: packets vanish, no FIN/RST
        ns.restore()                        # `up` again

Inside the namespace one child process runs the gateway on the namespace's loopback and a tiny
TCP forwarder on the namespace's veth address, so the gateway keeps its loopback-only,
plain-ws bind policy. Only this namespace's own /30 (10.231.X.0/30) is ever configured.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_counter = itertools.count()

CHILD = r"""
import asyncio, sys
from pathlib import Path
from desktop.gateway.rpc.server import GatewayConfig, GatewayServer
from tests.reliability.providers import ScriptedProvider

async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except Exception:
        pass
    finally:
        writer.close()

async def main():
    addr, data, token = sys.argv[1:]
    cfg = GatewayConfig(data_dir=Path(data), token=token, ping_interval=None, debug=True,
                        heartbeat_deadline=1.0)
    server = GatewayServer(cfg, ScriptedProvider(words=8))
    await server.start()
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])

    async def forward(r, w):
        ur, uw = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.gather(pipe(r, uw), pipe(ur, w))

    fwd = await asyncio.start_server(forward, addr, 0)
    print("READY", fwd.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=10)


class GatewayNetns:
    """See the module docstring; always deletes its namespace, even when set-up fails."""

    def __init__(self, tmp: Path, token: str) -> None:
        n = next(_counter)
        pid = os.getpid()
        self.name = f"hqt-{pid}-{n}"
        tag = f"{pid % 10000:04d}{n % 10}"
        self.host_if = f"hqh{tag}"
        self.ns_if = f"hqn{tag}"
        third = (pid + n) % 250 + 1
        fourth = (n * 4) % 252
        self.host_addr = f"10.231.{third}.{fourth + 1}"
        self.ns_addr = f"10.231.{third}.{fourth + 2}"
        self.tmp = tmp
        self.token = token
        self.url = ""
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> GatewayNetns:
        if sys.platform != "linux" or os.geteuid() != 0:
            pytest.skip("netns needs Linux and root")
        if shutil.which("ip") is None:
            pytest.skip("netns needs iproute2 (`ip`)")
        try:
            self._plumb()
        except (subprocess.SubprocessError, OSError) as exc:
            self.__exit__()
            detail = getattr(exc, "stderr", "") or exc
            pytest.skip(f"cannot build a network namespace here: {detail}")
        # Namespaces work here: from now on a failure is the project's, never a skip.
        try:
            self._start_gateway()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _plumb(self) -> None:
        _ip("netns", "add", self.name)
        _ip("link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
        _ip("link", "set", self.ns_if, "netns", self.name)
        _ip("addr", "add", f"{self.host_addr}/30", "dev", self.host_if)
        _ip("link", "set", self.host_if, "up")
        ns = ("netns", "exec", self.name, "ip")
        _ip(*ns, "addr", "add", f"{self.ns_addr}/30", "dev", self.ns_if)
        _ip(*ns, "link", "set", self.ns_if, "up")
        _ip(*ns, "link", "set", "lo", "up")

    def _start_gateway(self) -> None:
        self.tmp.mkdir(parents=True, exist_ok=True)
        stderr_path = self.tmp / "ns-gateway.stderr"
        with open(stderr_path, "w", encoding="utf-8") as stderr:
            self._proc = subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    self.name,
                    sys.executable,
                    "-c",
                    CHILD,
                    self.ns_addr,
                    str(self.tmp / "ns-gateway"),
                    self.token,
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                cwd=ROOT,
            )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line.startswith("READY"):
            tail = stderr_path.read_text(encoding="utf-8", errors="replace")[-3000:]
            pytest.fail(
                f"the gateway in the namespace did not start (first line {line!r}); "
                f"its stderr:\n{tail}",
                pytrace=False,
            )
        self.url = f"ws://{self.ns_addr}:{int(line.split()[1])}/api/ws"

    def blackhole(self) -> None:
        _ip("link", "set", self.host_if, "down")

    def restore(self) -> None:
        _ip("link", "set", self.host_if, "up")

    def __exit__(self, *exc: object) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()  # the child exits when its stdin closes
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            finally:
                if proc.stdout is not None:
                    proc.stdout.close()
        _ip("link", "del", self.host_if, check=False)
        _ip("netns", "del", self.name, check=False)
