"""Waiting on a condition that is re-checked whenever something notifies, bounded by a deadline."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

# A subscribe function: takes a listener, returns the unsubscribe callable.
Subscribe = Callable[[Callable[..., None]], Callable[[], None]]


async def wait_notified(
    predicate: Callable[[], bool],
    subscribe: list[Subscribe],
    what: str,
    timeout: float = 30.0,
) -> None:
    """Wait until `predicate()` holds, re-checked on every notification of `subscribe`."""
    changed = asyncio.Event()
    unsubs = [sub(lambda *_: changed.set()) for sub in subscribe]
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                changed.clear()
                await changed.wait()
    except TimeoutError:
        raise AssertionError(f"timed out waiting for: {what}") from None
    finally:
        for unsub in unsubs:
            unsub()
