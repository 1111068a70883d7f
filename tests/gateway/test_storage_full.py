"""A full gateway disk reaches the user by name; a refused submit leaves no trace."""

from __future__ import annotations

import base64
import sqlite3
from pathlib import Path

from tests.gateway.scripted import ScriptedProvider, text
from tests.gateway.wsclient import RpcFailure, client, gateway
from tests.reliability.history import Outcome
from tests.reliability.rig import rig


def fill(db: sqlite3.Connection, spare_pages: int = 0) -> None:
    """Real SQLITE_FULL from the gateway's own connection: only `spare_pages` more may be added."""
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages + spare_pages}")


async def test_submit_on_a_full_gateway_store_names_the_cause_and_records_nothing(
    data_dir: Path,
) -> None:
    async with gateway(data_dir, ScriptedProvider()) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"x" * 100).decode()
        await c.call("image.attach_bytes", session_id=sid, content_base64=png, filename="a.png")
        # Room for the submission record but not for the prompt's row as well: the disk fills
        # in the middle of the submit.
        fill(gw.store._db, spare_pages=60)
        try:
            await c.call("prompt.submit", session_id=sid, text="x" * 200_000, submission_ref="r1")
        except RpcFailure as exc:
            assert exc.message == "gateway storage full (disk is full)"
        else:
            raise AssertionError("a submit the store could not hold was accepted")
        gw.store._db.execute("PRAGMA max_page_count = 1000000")
        # Nothing half-done: the ref is free, the staged image is still staged, it runs once.
        assert gw.store.find_submission("r1") is None
        await c.call("prompt.submit", session_id=sid, text="x" * 200_000, submission_ref="r1")
        await c.wait_event("message.complete", sid)
        hist = await c.call("session.history", session_id=sid)
        assert [m["role"] for m in hist["messages"]] == ["user", "assistant"]
        assert hist["messages"][0]["attachments"][0]["filename"] == "a.png"


async def test_gateway_storage_full_reaches_the_restored_prompt_by_name(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        await r.wait_online()
        key = await r.create_session()
        assert r.gateway is not None
        fill(r.gateway.store._db)
        entry = r.submit(key, "y" * 200_000)
        await r.settled()
        op = r.history.ops[entry.submission_ref]
        assert op.outcome is Outcome.RESTORED
        assert op.error == "gateway storage full (disk is full)"


async def test_a_reply_the_full_store_cannot_keep_says_so_and_the_session_goes_on(
    data_dir: Path,
) -> None:
    provider = ScriptedProvider(text("z" * 300_000))
    async with gateway(data_dir, provider) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        fill(gw.store._db, spare_pages=8)  # the prompt fits, a 300 KB reply does not
        await c.call("prompt.submit", session_id=sid, text="write a lot")
        error = await c.wait_event("error", sid)
        done = await c.wait_event("message.complete", sid)
        assert error["payload"]["message"] == (
            "gateway storage full (disk is full): this reply was not saved"
        )
        assert done["payload"]["status"] == "error"
        gw.store._db.execute("PRAGMA max_page_count = 1000000")
        provider.chunks = text("short")
        await c.call("prompt.submit", session_id=sid, text="again")
        await c.wait_event("message.complete", sid, n=2)
        hist = await c.call("session.history", session_id=sid)
        assert [m["text"] for m in hist["messages"]][-2:] == ["again", "short"]
