"""Invalid Unicode (lone surrogates) never gets stored and never takes a socket down."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

from desktop.gateway.wire.text import REPLACEMENT
from tests.gateway.scripted import ScriptedProvider, text
from tests.gateway.wsclient import RpcFailure, client, gateway


def _raw_call(rid: int, method: str, params_json: str) -> str:
    """A request whose params hold JSON escapes as typed (json.dumps would not keep `\\ud800`)."""
    return f'{{"jsonrpc":"2.0","id":{rid},"method":"{method}","params":{params_json}}}'


async def test_lone_surrogate_title_is_refused_and_the_session_stays_resumable(
    data_dir: Path,
) -> None:
    async with gateway(data_dir, ScriptedProvider()) as gw, client(gw.url) as c:
        created = await c.call("session.create", title="fine")
        sid, key = created["session_id"], created["stored_session_id"]
        params = json.dumps({"session_id": sid})[:-1] + ',"title":"x\\ud800"}'
        reply = await c.send_raw(_raw_call(900, "session.title", params))
        assert reply["id"] == 900
        assert reply["error"]["code"] == -32602
        assert "params.title" in reply["error"]["message"]
        assert "lone surrogate" in reply["error"]["message"]
        # Prompts, filenames, anything stored: the same answer.
        prompt = json.dumps({"session_id": sid})[:-1] + ',"text":"hi \\udc00 there"}'
        reply = await c.send_raw(_raw_call(901, "prompt.submit", prompt))
        assert reply["error"]["code"] == -32602 and "params.text" in reply["error"]["message"]
        # Nothing was stored; the socket is up and the session resumes.
        snap = await c.call("session.resume", session_id=key)
        assert snap["info"]["title"] == "fine" and snap["messages"] == []
        assert await c.call("gateway.ping") == {"ok": True}
        assert not c.closed.is_set()


async def test_a_bad_value_already_in_memory_is_sent_replaced_not_dropping_the_socket(
    data_dir: Path,
) -> None:
    async with gateway(data_dir, ScriptedProvider()) as gw, client(gw.url) as c:
        sid = (await c.call("session.create", title="t"))["session_id"]
        gw.hub.get(sid).title = "x\ud800"  # as an older gateway could have accepted it
        for _ in range(3):  # every later activate used to kill the socket
            snap = await c.call("session.activate", session_id=sid)
            assert snap["info"]["title"] == "x" + REPLACEMENT
        assert await c.call("gateway.ping") == {"ok": True}
        assert not c.closed.is_set()


async def test_invalid_utf8_in_the_store_does_not_poison_a_resume(data_dir: Path) -> None:
    async with gateway(data_dir, ScriptedProvider()) as gw, client(gw.url) as c:
        created = await c.call("session.create", title="t")
        key = created["stored_session_id"]
        await c.call("prompt.submit", session_id=created["session_id"], text="hello")
        await c.wait_event("message.complete", created["session_id"])
        await c.call("session.close", session_id=created["session_id"])
        # Bytes no UTF-8 encoder writes (a CESU-8 surrogate), put there by another program.
        with closing(sqlite3.connect(gw.config.data_dir / "gateway.sqlite3")) as db, db:
            db.execute("UPDATE sessions SET title = CAST(X'78EDA080' AS TEXT) WHERE id = ?", (key,))
            db.execute(
                "UPDATE messages SET text = CAST(X'6869EDB080' AS TEXT) WHERE session_id = ?"
                " AND role = 'user'",
                (key,),
            )
        snap = await c.call("session.resume", session_id=key)
        assert snap["info"]["title"].startswith("x") and REPLACEMENT in snap["info"]["title"]
        assert snap["messages"][0]["text"].startswith("hi")
        listed = await c.call("session.list")
        assert listed["sessions"][0]["id"] == key
        assert not c.closed.is_set()


async def test_provider_text_with_a_lone_surrogate_is_stored_and_streamed_replaced(
    data_dir: Path,
) -> None:
    provider = ScriptedProvider(text("ok ", "\ud83d", " end"))
    async with gateway(data_dir, provider, coalesce_interval=0) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        await c.call("prompt.submit", session_id=sid, text="go")
        done = await c.wait_event("message.complete", sid)
        assert done["payload"]["text"] == f"ok {REPLACEMENT} end"
        hist = await c.call("session.history", session_id=sid)
        assert hist["messages"][-1]["text"] == f"ok {REPLACEMENT} end"
        assert hist["messages"][-1]["status"] == "complete"
        assert not c.closed.is_set()
        assert gw.hub.get(sid).log.last_seq > 0


async def test_lone_surrogate_in_a_notification_or_id_gets_no_crash(data_dir: Path) -> None:
    async with gateway(data_dir, ScriptedProvider()) as gw, client(gw.url) as c:
        await c.ws.send('{"jsonrpc":"2.0","method":"session.create","params":{"title":"\\ud800"}}')
        reply = await c.send_raw('{"jsonrpc":"2.0","id":"a\\ud800","method":"gateway.ping"}')
        assert reply["id"] is None and reply["error"]["code"] == -32600
        try:
            await c.call("session.title", session_id="\udfff")
        except RpcFailure as exc:
            assert exc.code == -32602
        assert await c.call("gateway.ping") == {"ok": True}
        assert gw.hub.stats()["sessions"] == 0
