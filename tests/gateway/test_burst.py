"""A burst of pipelined requests in one write is answered in full: reading waits for the writer."""

from __future__ import annotations

from pathlib import Path

from tests.gateway.scripted import ScriptedProvider
from tests.gateway.wsclient import TOKEN, gateway
from tests.support.burst import pipelined_burst


async def test_ten_thousand_pipelined_requests_in_one_write_are_all_answered(
    data_dir: Path,
) -> None:
    async with gateway(data_dir, ScriptedProvider()) as gw:
        pings = [{"jsonrpc": "2.0", "id": i, "method": "gateway.ping"} for i in range(10_000)]
        result = await pipelined_burst(gw.url, TOKEN, pings)
    assert result.bytes_written > 500_000  # one write of about 0.6 MB
    assert not result.closed
    assert len(result.answered) == 10_000 and result.errors == 0


async def test_a_burst_of_creates_with_their_events_is_answered_in_order_of_work(
    data_dir: Path,
) -> None:
    async with gateway(data_dir, ScriptedProvider()) as gw:
        creates = [
            {"jsonrpc": "2.0", "id": i, "method": "session.create", "params": {"title": f"s{i}"}}
            for i in range(2_000)
        ]
        result = await pipelined_burst(gw.url, TOKEN, creates)
        assert len(result.answered) == 2_000 and result.errors == 0
        assert result.events >= 2_000  # each create's session.info went out too
        assert not result.closed
