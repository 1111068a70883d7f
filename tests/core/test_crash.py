"""kill -9 while typing or sending: a restart finds the draft, and settles the prompt once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from desktop.common.clock import ManualClock
from desktop.core.delivery.outbox import NOT_CONFIRMED, Outbox
from desktop.core.disk.drafts import DraftKeeper
from desktop.core.disk.store import Store, Wire
from desktop.core.models import DeliveryState
from tests.core.delivery.test_outbox import FakeGateway

ROOT = Path(__file__).resolve().parents[2]

# The child types like a person (real timers), so only the child waits on the wall clock; the
# test itself waits on the child's output line, then kills it without any clean shutdown.
TYPING = """
import asyncio, sys
from desktop.common.clock import AsyncioClock
from desktop.core.disk.drafts import DraftKeeper
from desktop.core.disk.store import Store

async def main():
    keeper = DraftKeeper(Store(sys.argv[1]), AsyncioClock())
    text = ""
    for ch in "half a thought":
        text += ch
        keeper.update("s1", text, len(text))
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.5)  # the autosave bound after the last keystroke
    print("typed", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""

SENDING = """
import asyncio, sys
from desktop.common.clock import AsyncioClock
from desktop.core.delivery.outbox import Outbox
from desktop.core.disk.store import Store

class Caps:
    submission_ref = sys.argv[2] == "dedup"
    history_window = True
    raw = {}

class Port:
    dialect = Caps()
    def is_online(self):
        return True
    def turn_state(self, key):
        return None
    def user_rows(self, key):
        return None
    def watch(self, key, callback):
        return None
    async def call(self, method, params=None, *, timeout=30.0):
        print("wrote", method, params.get("submission_ref", "-"), flush=True)
        await asyncio.Event().wait()  # the reply never comes: we are killed first

async def main():
    port = Port()
    outbox = Outbox(Store(sys.argv[1]), lambda _profile: port, AsyncioClock())
    outbox.submit("p", "s1", "rt1", "the prompt", history_len=2)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def _run_and_kill(script: str, *args: str) -> str:
    """Run `script` until it prints its first line, then SIGKILL it; return that line."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline().strip()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        err = proc.stderr.read()
    assert proc.returncode == -signal.SIGKILL, err
    assert line, f"child printed nothing: {err}"
    return line


def test_kill_9_while_typing_keeps_the_draft(data_dir: Path) -> None:
    db = data_dir / "app.db"
    assert _run_and_kill(TYPING, str(db)) == "typed"
    with Store(db) as store:
        draft = DraftKeeper(store, ManualClock()).load("s1")
        assert (draft.text, draft.cursor) == ("half a thought", 14)


@pytest.mark.parametrize("outcome", ["ran", "never_arrived"])
async def test_kill_9_while_sending_on_legacy_gateway_is_settled_never_resent(
    data_dir: Path, outcome: str
) -> None:
    db = data_dir / "app.db"
    line = _run_and_kill(SENDING, str(db), "legacy")
    assert line == "wrote prompt.submit -"
    with Store(db) as store:
        gw = FakeGateway(dedup=False)
        outbox = Outbox(store, lambda _profile: gw, ManualClock())
        keeper = DraftKeeper(store, ManualClock())
        outbox.on_restore(lambda e: keeper.restore(e.session_key, e.text, e.attachments).saved)
        (entry,) = outbox.entries()
        assert (entry.state, entry.wire) == (DeliveryState.UNCONFIRMED, Wire.SUBMITTED)
        await outbox.flush()
        assert gw.submits() == []  # never replayed on a gateway that would run it twice
        old = [{"role": "user", "text": "the prompt"}, {"role": "assistant", "text": "a"}]
        if outcome == "ran":
            gw.snapshot = {"running": True, "inflight": {"user": "the prompt"}}
        else:  # only the identical, older prompt is in history: not proof of delivery
            gw.snapshot = {"running": False}
            gw.history = {"count": 2, "messages": old}
        result = await outbox.reconcile_via("p", "s1")
        assert outbox.entries() == []
        if outcome == "ran":
            assert len(result.confirmed) == 1 and keeper.load("s1").empty
        else:
            assert [e.error for e in result.failed] == [NOT_CONFIRMED]
    with Store(db) as store:  # the restored prompt itself survived
        back = store.draft("s1")
        assert (back.text if back else "") == ("" if outcome == "ran" else "the prompt")


async def test_kill_9_while_sending_on_dedup_gateway_resends_same_ref_once(
    data_dir: Path,
) -> None:
    db = data_dir / "app.db"
    ref = _run_and_kill(SENDING, str(db), "dedup").split()[-1]
    with Store(db) as store:
        gw = FakeGateway(dedup=True)
        gw.served_refs[ref] = {"status": "streaming"}  # the killed process's submit had run
        outbox = Outbox(store, lambda _profile: gw, ManualClock())
        await outbox.flush()
        assert [p["submission_ref"] for p in gw.submits()] == [ref]
        assert gw.executed == [] and outbox.entries() == []
