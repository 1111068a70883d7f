"""End to end on the embedded gateway: a reply's deltas reach the screen without reading the
store or rebuilding the queued follow-ups' rows, however many arrive (counted, not timed).

The deltas enter where a received frame enters the client (as bench.streaming feeds them):
the real controller, store and window are on their path; the gateway holds the turn open."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from desktop.core.delivery.outbox import HELD
from desktop.core.link.protocol import decode_frame, encode_event
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.e2e_support import App, until, use_fake_provider

pytestmark = pytest.mark.slow

DELTAS = 400


async def test_deltas_neither_read_the_store_nor_rebuild_the_queued_rows(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    gate = threading.Event()
    with FakeOpenAIServer("done") as provider:
        provider.script = [{"content": "the long reply", "gate": gate}]
        use_fake_provider(tmp_path, provider.base_url)
        app = App.open(tmp_path, qtbot)
        try:
            await app.wait_online()
            app.type_and_send(qtbot, "first")
            await until(lambda: app.window.composer.running, "the reply runs")
            app.type_and_send(qtbot, "and then this")
            shown = app.window.queued_rows
            await until(lambda: shown.isVisible() and len(shown.rows) == 1, "a queued row")
            controller = app.embedded
            key = app.window.session_key
            assert key is not None
            await until(
                lambda: [m.delivery_error for m in controller.queued(key)] == [HELD],
                "the follow-up held behind the reply",
            )
            await until(lambda: not app.window.chat_view.chat_model._dirty, "drawn")
            rows = list(shown.rows)
            runtime = controller._router.runtime_id(key)
            client = controller._sup.client
            statements: list[str] = []
            conn = app.core.store._conn
            conn.set_trace_callback(statements.append)
            try:
                for k in range(DELTAS):
                    frame = encode_event(
                        "message.delta",
                        {"text": f" word{k}" if k % 50 else "\n\n| a | b |\n|---|---|\n"},
                        session_id=runtime,
                    )
                    client._on_event(client._link, decode_frame(frame))
                    if k % 40 == 39:
                        await until(lambda: not app.window.chat_view.chat_model._dirty, "drawn")
            finally:
                conn.set_trace_callback(None)
            on_screen = "".join(m.text for m in app.window.chat_view.messages())
            assert f"word{DELTAS - 1}" in on_screen, "the last delta reached the view"
            # The growing reply is kept at most once a second (should the app go away), never
            # once a delta; the queue is not read back from the store for any delta.
            writes = [
                s for s in statements if not s.lstrip().upper().startswith(("SELECT", "PRAGMA"))
            ]
            reads = [s for s in statements if "outbox" in s.lower()]
            assert len(statements) <= 12, statements[:20]
            assert len(writes) <= 6 and reads == [], (writes[:6], reads[:6])
            assert shown.rows == rows, "the queued row was rebuilt"
        finally:
            gate.set()
            await app.close()
