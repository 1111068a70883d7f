"""Fuzzed frames: whatever arrives, the gateway answers with a well-formed reply or nothing."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from desktop.common.clock import ManualClock
from desktop.gateway.rpc.connection import Connection
from desktop.gateway.rpc.methods import Methods
from desktop.gateway.sessions.hub import SessionHub
from desktop.gateway.sessions.spool import AttachmentSpool
from desktop.gateway.sessions.store import Store
from tests.gateway.scripted import ScriptedProvider

METHODS = ["gateway.ping", "session.list", "session.activate", "session.title", "nope", ""]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
requests = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0"]) | json_values,
        "id": json_values,
        "method": st.sampled_from(METHODS) | json_values,
        "params": json_values,
    },
)
frames = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=40),
    requests.map(json.dumps),
    json_values.map(json.dumps),
)


@settings(max_examples=300, deadline=None)
@given(frame=frames)
def test_any_frame_gets_a_valid_json_rpc_reply_or_none(frame: Any) -> None:
    store = Store(Path(":memory:"))
    spool_dir = tempfile.TemporaryDirectory()
    try:
        clock = ManualClock()
        spool = AttachmentSpool(Path(spool_dir.name), wall=clock.wall)
        hub = SessionHub(store, ScriptedProvider(), clock, spool, epoch="e")
        conn = Connection(None, hub, Methods(hub), ManualClock())  # type: ignore[arg-type]
        reply = conn.answer(frame)
        if reply is not None:
            assert reply["jsonrpc"] == "2.0" and "id" in reply
            assert ("result" in reply) != ("error" in reply)
            if "error" in reply:
                assert isinstance(reply["error"]["code"], int) and reply["error"]["message"]
            json.dumps(reply)
    finally:
        store.close()
        spool_dir.cleanup()
