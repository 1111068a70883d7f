"""The throughput bench keeps measuring the client it is named for: the client now asks
`client.capabilities` after gateway.ready, and a replay transport that never answers made the row
hang until the bench gave up ("did not finish within 90 s")."""

from __future__ import annotations

import asyncio

from bench.throughput import client_rate, frames


def test_client_rate_finishes_against_the_current_client() -> None:
    items = frames(500)
    rate = asyncio.run(asyncio.wait_for(client_rate(items), timeout=20))
    assert rate > 0  # every frame dispatched (client_rate asserts the count)
