"""Fault matrix 18-24: auth, refused/503 handshakes, cut submits, kill -9, disk, owners, gone."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from desktop.core.errors import RpcError, StorageError
from desktop.core.models import ConnectionState
from tests.reliability.clocks import ScaledClock
from tests.reliability.conftest import RecordFigure
from tests.reliability.history import Outcome
from tests.reliability.providers import expected_reply
from tests.reliability.rig import TOKEN, rig, until
from tests.support.loop_thread import close_server

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


async def test_18_auth_refused_no_retries(tmp_path: Path, record_figure: RecordFigure) -> None:
    clock = ScaledClock(100.0)
    async with rig(tmp_path, token="wrong-token", sup_clock=clock) as r:
        await until(lambda: r.sup.status.state is ConnectionState.FAILED, "failed", 5)
        attempts = r.proxy.accepted
        record_figure(
            "18",
            "0 retries after auth refused (HTTP 403)",
            f"{attempts - 1} retries, {clock.pending} timers, reason {r.sup.status.reason!r}",
            attempts == 1 and clock.pending == 0 and "403" in r.sup.status.reason,
        )


@contextlib.asynccontextmanager
async def http_503() -> AsyncIterator[int]:
    """A server answering every WebSocket upgrade with 503, like a proxy before its backend."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        await close_server(server)
        await server.wait_closed()


async def test_19_handshake_503_and_refused_are_retried(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    clock = ScaledClock(20.0)
    async with http_503() as port503, rig(tmp_path, sup_clock=clock, start=False) as r:
        gateway_port = r.proxy.target_port
        r.proxy.target_port = port503
        r.sup.start()
        await until(lambda: r.proxy.accepted >= 3, "three 503 handshakes", 10)
        r.proxy.set_mode("reset")  # now connection refused / reset
        refused_from = r.proxy.accepted
        await until(lambda: r.proxy.accepted >= refused_from + 3, "three refused attempts", 10)
        r.proxy.target_port = gateway_port
        r.proxy.set_mode("pass")
        back = clock.monotonic()
        await r.wait_online(10)
        waited = clock.monotonic() - back
        reasons = [s.reason for s in r.statuses if s.state is ConnectionState.RECONNECTING]
        saw_503 = any("503" in x for x in reasons)
        failed = any(s.state is ConnectionState.FAILED for s in r.statuses)
        record_figure(
            "19",
            "503 and refused retried with backoff; online <= next slot after recovery",
            f"{len(reasons)} retries (503 seen: {saw_503}), online {waited:.2f} virtual s later",
            saw_503 and not failed and waited <= 2.5,
        )


@pytest.mark.parametrize("ran", [True, False], ids=["server-ran-it", "server-never-got-it"])
async def test_20_cut_after_submit_written(
    tmp_path: Path, record_figure: RecordFigure, ran: bool
) -> None:
    async with rig(tmp_path) as r:
        await r.wait_online()
        key = await r.create_session()
        # ran: the reply is lost on the way back; not ran: the request never arrives.
        r.proxy.set_mode("blackhole", direction="down" if ran else "up")
        entry = r.submit(key, f"cut submit ran={ran}")
        await until(lambda: r.history.ops[entry.submission_ref].ambiguous, "ambiguous", 5)
        served_during = r.served()[entry.text]
        r.restore_network()
        await r.settled()
        served = r.served()
        op = r.history.ops[entry.submission_ref]
        assert r.problems(served) == []
        await r.wait_reply(key, expected_reply(entry.text, 8))
        record_figure(
            f"20{'a' if ran else 'b'}",
            "ambiguous outcome resolved; prompt ran exactly once",
            f"ran before reconnect: {served_during}, total runs {served[entry.text]}, "
            f"outcome {op.outcome.value if op.outcome else None}",
            served[entry.text] == 1 and op.outcome is Outcome.CONFIRMED,
        )


CHILD = """
import asyncio, sys, time
from desktop.common.clock import AsyncioClock
from desktop.core.disk.drafts import DraftKeeper
from desktop.core.link.client import JsonRpcGatewayClient
from desktop.core.delivery.outbox import Outbox
from desktop.core.disk.store import Store, Wire

url, token, db, key, runtime = sys.argv[1:]

class Port:
    def __init__(self, c):
        self.c = c
    @property
    def dialect(self):
        return self.c.dialect
    def is_online(self):
        return self.c.is_open
    def turn_state(self, key):
        return None  # no chat followed: nothing holds the prompt
    def user_rows(self, key):
        return None
    def watch(self, key, callback):
        return None
    async def call(self, m, p=None, *, timeout=30.0):
        return await self.c.call(m, p, timeout=timeout)

async def main():
    store = Store(db)
    keeper = DraftKeeper(store, AsyncioClock())
    text = "half a thought for later"
    for i in range(len(text)):
        keeper.update(key + "-next", text[: i + 1], i + 1)
        await asyncio.sleep(0.005)
    print("typed", time.monotonic(), flush=True)
    client = JsonRpcGatewayClient(url, token=token, call_timeout=600, heartbeat_interval=0)
    await client.connect()
    print("connected", flush=True)
    sys.stdin.readline()
    port = Port(client)
    outbox = Outbox(store, lambda _profile: port, AsyncioClock(), call_timeout=600)
    e = outbox.submit("p1", key, runtime, "sent then killed", history_len=0)
    while store.outbox_get(e.submission_ref).wire < Wire.SUBMITTED:
        await asyncio.sleep(0.005)
    print("sent", e.submission_ref, flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


async def test_21_client_killed_while_typing_and_sending(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    async with rig(tmp_path, start=False) as r:
        r.sup.start()
        await r.wait_online()
        key = await r.create_session()
        runtime = r.router.runtime_id(key)
        r.sup.pause()  # the first app instance is the child from here on
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            CHILD,
            r.url,
            TOKEN,
            r.store.path,
            key,
            str(runtime),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=ROOT,
        )
        assert child.stdin is not None and child.stdout is not None
        try:
            typed_at = float((await asyncio.wait_for(child.stdout.readline(), 30)).split()[1])
            assert (await asyncio.wait_for(child.stdout.readline(), 30)).startswith(b"connected")
            r.proxy.set_mode("blackhole", direction="down")  # it runs; the reply never returns
            child.stdin.write(b"go\n")
            await child.stdin.drain()
            ref = (await asyncio.wait_for(child.stdout.readline(), 30)).split()[1].decode()
            # Kill no sooner than the autosave bound after the last keystroke.
            await until(lambda: time.monotonic() - typed_at >= 0.5, "autosave bound", 5)
            child.send_signal(signal.SIGKILL)
            await child.wait()
        finally:
            if child.returncode is None:
                child.kill()
                await child.wait()
        r.history.invoke(ref, "sent then killed", key, epoch=0, generation=0)
        r.history.drafts_saved[key + "-next"] = "half a thought for later"
        draft = r.store.draft(key + "-next")
        r.history.drafts_found[key + "-next"] = draft.text if draft else ""
        r.restore_network()
        r.sup.resume()
        await r.settled()
        served = r.served()
        problems = r.problems(served)
        record_figure(
            "21",
            "kill -9: 0 drafts lost, the in-flight prompt runs exactly once",
            f"draft kept: {draft is not None}, runs {served['sent then killed']}, "
            f"{len(problems)} violations",
            not problems and served["sent then killed"] == 1,
        )


async def test_22_disk_full_and_read_only(tmp_path: Path, record_figure: RecordFigure) -> None:
    async with rig(tmp_path) as r:
        await r.wait_online()
        key = await r.create_session()
        conn = r.store._conn  # the store's own connection: fill the "disk", then lock it
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        tried: list[str] = []
        refused: dict[str, StorageError] = {}

        def attempt(text: str) -> None:
            tried.append(text)
            try:
                r.submit(key, text)
            except StorageError as exc:
                refused[text] = exc

        conn.execute(f"PRAGMA max_page_count = {pages}")
        attempt("disk full: " + "x" * (4096 * (free + 64)))  # more than every free page
        conn.execute("PRAGMA max_page_count = 1000000")
        conn.execute("PRAGMA query_only = ON")
        attempt("read only")
        conn.execute("PRAGMA query_only = OFF")
        entry = r.submit(key, "after making room")
        # Count only once the outbox has settled: every send that was started has run.
        await r.settled()
        await r.outbox.idle()
        written = [json.loads(s)["params"].get("text") for s in r.sent if '"prompt.submit"' in s]
        refused_sent = sum(text in refused for text in written)
        kinds = sorted({type(e).__name__ for e in refused.values()})
        confirmed = r.history.ops[entry.submission_ref].outcome is Outcome.CONFIRMED
        record_figure(
            "22",
            "a prompt that cannot be persisted is refused, never sent (0 sent, counted after "
            "the outbox settled); the next one goes through",
            f"{len(refused)}/{len(tried)} tried refused ({', '.join(kinds)}), "
            f"{refused_sent} of them sent; next prompt confirmed: {confirmed}",
            len(refused) == len(tried) == 2
            and refused_sent == 0
            and all(e.is_retryable() for e in refused.values())
            and confirmed
            and written == ["after making room"],
        )


async def test_23_two_clients_one_session(tmp_path: Path, record_figure: RecordFigure) -> None:
    async with rig(tmp_path, words=40, word_interval=0.02) as a:
        await a.wait_online()
        key = await a.create_session()
        async with rig(tmp_path / "b", gateway=False, url=a.url, profile_id="p2") as b:
            await b.wait_online()
            a.submit(key, "owned by A")
            conv = a.router.conversation(key)
            await until(lambda: conv.streaming_message is not None, "A streaming")
            with pytest.raises(RpcError) as refused:
                await b.router.open(key)
            await a.wait_reply(key, expected_reply("owned by A", 40))
            await a.sup.close()
            await until(lambda: a.proxy.connections == 1, "only B's socket left", 5)
            await until(lambda: b.online, "B online", 5)
            b.router.unroute(key)
            conv_b = await b.router.open(key)
            took_over = any(m.text == expected_reply("owned by A", 40) for m in conv_b.messages)
        record_figure(
            "23",
            "second client refused with 4091 while the owner is live; takes over after it closes",
            f"refused with {refused.value.code}; A's reply exact; B took over: {took_over}",
            refused.value.code == 4091 and took_over,
        )


async def test_24_session_gone_after_gateway_restart(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    async with rig(tmp_path) as r:
        await r.wait_online()
        key = await r.create_session()
        r.proxy.set_mode("reset")
        await until(lambda: r.sup.status.state is not ConnectionState.ONLINE, "offline", 5)
        entry = r.submit(key, "for a session that will be gone")
        assert r.gateway is not None
        await r.gateway.stop()
        await r.start_gateway(tmp_path / "fresh-gateway")  # a gateway that never knew it
        r.proxy.target_port = r.gateway_port
        r.proxy.set_mode("pass")
        await r.settled()
        op = r.history.ops[entry.submission_ref]
        problems = r.problems(r.served(tmp_path / "fresh-gateway" / "gateway.sqlite3"))
        record_figure(
            "24",
            "gone session flagged; its queued prompt back in the composer (0 lost)",
            f"gone={key in r.gone}, outcome {op.outcome.value if op.outcome else None} "
            f"({op.error}), {len(problems)} violations",
            key in r.gone and op.outcome is Outcome.RESTORED and not problems,
        )
