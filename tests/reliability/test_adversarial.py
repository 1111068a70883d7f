"""Adversarial rows (issue 14): a second launch, invalid Unicode, a request burst, a staging soak.

Each runs the real thing: the app and the gateway as processes where the row is about processes,
real sockets everywhere, the gateway's real SQLite store.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sqlite3
import subprocess
import time
from contextlib import closing
from pathlib import Path

import pytest

from tests.app.test_single_instance import gateway_starts, launch_again, running_app
from tests.gateway.wsclient import TOKEN as GATEWAY_TOKEN
from tests.gateway.wsclient import client
from tests.reliability.conftest import RecordFigure
from tests.reliability.rig import TOKEN as RIG_TOKEN
from tests.reliability.rig import rig, until
from tests.support.burst import pipelined_burst
from tests.support.gateway_process import (
    ROOT,
    gateway_command,
    gateway_env,
    gateway_process,
    rss_mb,
)

# Real app and gateway processes and a 1,000-cycle soak: slower than most on a busy machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
READY = "HERMES_QT_GATEWAY_READY url="


def duplicated_rows(db: Path, key: str) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT role, text, COUNT(*) FROM messages WHERE session_id = ?"
            " GROUP BY role, text HAVING COUNT(*) > 1",
            (key,),
        ).fetchall()
        return sum(n - 1 for _, _, n in rows)
    finally:
        conn.close()


def start_by_hand(data_dir: Path) -> subprocess.Popen[str]:
    """`hermes-qt-gateway --data-dir DIR` as a user would type it."""
    return subprocess.Popen(
        gateway_command(data_dir),
        cwd=ROOT,
        env=gateway_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_a2_second_launch(tmp_path: Path, record_figure: RecordFigure) -> None:
    # The app launched twice on one data dir (a double-click on the launcher).
    root = tmp_path / "app"
    app_log = root / "state" / "logs" / "hermes-qt.log"
    with running_app(root):
        began = time.monotonic()
        second = launch_again(root)
        took = time.monotonic() - began
        await until(lambda: "a second launch on this data dir" in app_log.read_text(), "raise")
        app_gateways = gateway_starts(root)
    # A gateway started by hand on a data dir in use, while prompts are queued on the first.
    gw_dir = tmp_path / "gateway"
    second_gateways = 0
    refusal = ""
    with gateway_process(gw_dir) as (_first, url):
        async with client(url) as a:
            created = await a.call("session.create")
            sid, key = created["session_id"], created["stored_session_id"]
            await a.call("prompt.submit", session_id=sid, text="block first", submission_ref="r0")
            await a.wait_event("message.delta", sid)
            for i in range(3):
                await a.call(
                    "prompt.submit", session_id=sid, text=f"q{i}", submission_ref=f"r{i + 1}"
                )
            other = start_by_hand(gw_dir)
            assert other.stdout is not None and other.stderr is not None
            line = other.stdout.readline()  # its ready line, or EOF when it refuses
            if line.startswith(READY):
                second_gateways += 1
                async with client(line.strip().split("url=", 1)[1]) as b:
                    await b.call("session.resume", session_id=key)  # what a second app does
                other.kill()
            else:
                code, err = other.wait(), other.stderr.read()
                refusal = f"exit {code}" + (", data dir in use" if "already using" in err else "")
            other.wait()
            other.stdout.close()
            other.stderr.close()
            await a.call("session.interrupt", session_id=sid)
            await a.wait_event("message.complete", sid, n=4)
    duplicates = duplicated_rows(gw_dir / "gateway.sqlite3", key)
    raised = "raised the first" if "raised its window" in second.stdout else repr(second.stdout)
    second_gateways += app_gateways - 1
    record_figure(
        "A2",
        "second launch: raises the first and exits 0; 0 second gateways; 0 duplicated rows",
        f"second app: exit {second.returncode} in {took:.1f} s, "
        f"{raised}; "
        f"{second_gateways} second gateways (one started by hand: {refusal or 'ran'}); "
        f"{duplicates} duplicated rows",
        second.returncode == 0 and second_gateways == 0 and duplicates == 0,
    )


async def test_a3_lone_surrogate(tmp_path: Path, record_figure: RecordFigure) -> None:
    async with rig(tmp_path) as r:
        await r.wait_online()
        key = await r.create_session()
        runtime = r.router.runtime_id(key)
        assert runtime and r.gateway is not None
        deaths = len(r.deaths)
        # 1. Sent raw by any client: refused at the boundary, nothing stored.
        async with client(r.gateway.url, token=RIG_TOKEN) as raw:
            frame = (
                '{"jsonrpc":"2.0","id":1,"method":"session.title",'
                f'"params":{{"session_id":"{runtime}","title":"x\\ud800"}}}}'
            )
            refused = (await raw.send_raw(frame))["error"]["code"]
        # 2. Typed or pasted into the app: its own socket sends it replaced.
        await r.sup.call("session.title", {"session_id": runtime, "title": "y\ud800"})
        # 3. A bad value already held in gateway memory: every activate used to drop the socket.
        r.gateway.hub.get(runtime).title = "x\ud800"
        for _ in range(3):
            await r.sup.call("session.activate", {"session_id": runtime})
        # 4. Invalid UTF-8 already in the gateway's store: a resume used to fail or drop.
        r.gateway.hub.close(r.gateway.hub.get(runtime))
        store_path = r.gateway.config.data_dir / "gateway.sqlite3"
        with closing(sqlite3.connect(store_path)) as db, db:  # another program's write
            db.execute("UPDATE sessions SET title = CAST(X'78EDA080' AS TEXT) WHERE id = ?", (key,))
        snap = await r.sup.call("session.resume", {"session_id": key})
        drops = len(r.deaths) - deaths
        record_figure(
            "A3",
            "lone surrogate: refused (-32602) or replaced; 0 socket drops",
            f"raw title refused with {refused}; app-sent, in-memory (3 activations) and stored "
            f"bad values served as {snap['info']['title']!r}; {drops} socket drops, "
            f"{r.reconnects()} reconnects",
            refused == -32602
            and snap["info"]["title"].startswith("x\ufffd")  # the stored bad bytes, replaced
            and drops == 0
            and r.reconnects() == 0
            and r.online,
        )


async def test_a4_burst_of_10000_pipelined_requests(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    with gateway_process(tmp_path / "gateway") as (_proc, url):
        pings = [{"jsonrpc": "2.0", "id": i, "method": "gateway.ping"} for i in range(10_000)]
        began = time.monotonic()
        result = await pipelined_burst(url, GATEWAY_TOKEN, pings)
        took = time.monotonic() - began
    record_figure(
        "A4",
        "burst of 10,000 pipelined requests in one write: all answered, socket kept",
        f"{len(result.answered)}/10000 answered ({result.errors} errors) in {took:.2f} s from "
        f"one {result.bytes_written // 1024} KB write; socket "
        f"{'closed (' + str(result.close_code) + ')' if result.closed else 'kept'}",
        len(result.answered) == 10_000 and result.errors == 0 and not result.closed,
    )


WARM_UP = 10  # cycles on the first socket
CONNECTIONS = 9  # then this many sockets of
CYCLES_PER_CONNECTION = 110  # cycles each: 1,000 in all
IMAGE_BYTES = 150_000


async def reaped_stats(url: str) -> dict[str, int]:
    """debug.stats once every session left behind has been reaped (or after 10 s)."""
    async with client(url) as c:
        stats: dict[str, int] = await c.call("debug.stats")
        deadline = time.monotonic() + 10
        while stats["sessions"] and time.monotonic() < deadline:  # the last reap is due
            await asyncio.sleep(0.05)
            stats = await c.call("debug.stats")
    return stats


async def test_a5_rss_flat_over_1000_open_stage_close_cycles(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    """Each cycle opens a session and stages an image never sent, then the socket closes.

    RSS is taken idle after a 10-cycle warm-up, then while each later socket holds its 110
    staged images, and idle again at the end. The gateway's idle timeout is 0.5 s here
    (production 120 s) so the sessions left behind are reaped within the run.
    """
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + os.urandom(IMAGE_BYTES)).decode("ascii")
    args = ("--debug", "--idle-session-timeout", "0.5")
    with gateway_process(tmp_path / "gateway", *args) as (proc, url):
        base = 0.0
        held: list[float] = []
        for n in range(CONNECTIONS + 1):
            async with client(url) as c:
                for _ in range(CYCLES_PER_CONNECTION if n else WARM_UP):
                    sid = (await c.call("session.create"))["session_id"]
                    await c.call(
                        "image.attach_bytes", session_id=sid, content_base64=png, filename="i.png"
                    )
                if n:
                    held.append(rss_mb(proc.pid))
            if not n:
                await reaped_stats(url)
                base = rss_mb(proc.pid)
        stats = await reaped_stats(url)
        end = rss_mb(proc.pid)
    peak = max(held) - base
    growth = end - base
    cycles = WARM_UP + CONNECTIONS * CYCLES_PER_CONNECTION
    record_figure(
        "A5",
        "RSS after 1,000 open/stage/close cycles flat within 10 MB; idle sessions reaped",
        f"RSS {base:.1f} MB idle after {WARM_UP} cycles; {peak:+.1f} MB at most while a socket "
        f"held {CYCLES_PER_CONNECTION} staged images; {growth:+.1f} MB idle after {cycles}; "
        f"{stats['sessions']} "
        f"sessions left in memory, {stats['reaped_sessions']} reaped; "
        f"{stats['staged_bytes'] / 2**20:.0f} MB staged on disk",
        peak <= 10 and growth <= 10 and stats["sessions"] == 0,
    )
