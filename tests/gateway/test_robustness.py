"""One misbehaving client never stalls another; a client that cannot keep up is dropped."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.gateway.scripted import ScriptedProvider, text
from tests.gateway.wsclient import TOKEN, client, gateway

BIG = "x" * (256 * 1024)


async def test_stalled_client_is_dropped_and_others_keep_streaming(data_dir: Path) -> None:
    provider = ScriptedProvider(text(*[BIG] * 120))
    async with gateway(
        data_dir,
        provider,
        send_queue_limit=8,
        send_queue_bytes=2 * 1024 * 1024,
        coalesce_interval=0,
    ) as gw:
        # The stalled client: reads nothing after its first call, so its TCP window fills up.
        stalled = await connect(f"{gw.url}?token={TOKEN}", max_size=None, max_queue=1)
        try:
            await stalled.recv()  # gateway.ready
            await stalled.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session.create"}))
            reply = json.loads(await stalled.recv())
            while "id" not in reply:  # session.info may come first
                reply = json.loads(await stalled.recv())
            stuck_sid = reply["result"]["session_id"]
            submit = {"session_id": stuck_sid, "text": "flood me"}
            await stalled.send(
                json.dumps({"jsonrpc": "2.0", "id": 2, "method": "prompt.submit", "params": submit})
            )
            async with client(gw.url) as healthy:
                assert await healthy.call("gateway.ping") == {"ok": True}
                flood = gw.hub.get(stuck_sid).worker
                assert flood is not None
                await flood  # the flooded turn runs to its end though its client is gone
                assert gw.hub.get(stuck_sid).owner is None  # dropped, not waited for
                provider.chunks = text("Hello", ", ", "world")  # the next turns get short replies
                sid = (await healthy.call("session.create"))["session_id"]
                await healthy.call("prompt.submit", session_id=sid, text="still there?")
                done = await healthy.wait_event("message.complete", sid)
                assert done["payload"]["text"] == "Hello, world"
                hist = await healthy.call("session.history", session_id=stuck_sid)
                # 30 MB of reply cannot go in one frame: it is sent cut, and says so.
                last = hist["messages"][-1]
                assert last["truncated"] is True and last["text_chars"] == len(BIG) * 120
                assert hist["messages"][-1]["status"] == "complete"
        finally:
            # Drain what the kernel still holds: the gateway's abort is behind it.
            with contextlib.suppress(ConnectionClosed):
                async for _ in stalled:
                    pass
            assert stalled.close_code != 1000
            await stalled.close()
