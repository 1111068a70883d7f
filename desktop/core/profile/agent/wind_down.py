"""A call made just after a turn ended, while the gateway still winds that turn down.

Hermes sends a turn's end before it lets go of the session: 0.19 clears its `running` flag
only after `message.complete` (its goal check runs in between), 0.22 answers 4009 (busy) to
`session.undo` for a moment after. A Compress or Restore clicked as the reply lands would be
refused with "a reply is running" although none is on screen. Such a call is refused, never
half done, so it is asked again for a short while as long as no turn runs in the chat.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from desktop.common.codes import SESSION_BUSY
from desktop.core.errors import RpcError
from desktop.core.link.supervisor import ConnectionSupervisor

WIND_DOWN_ATTEMPTS = 20
WIND_DOWN_WAIT = 0.25  # seconds between attempts: five in all


async def call_past_turn_end(
    sup: ConnectionSupervisor,
    sleep: Callable[[float], Awaitable[None]],
    method: str,
    params: dict[str, Any],
    *,
    running: Callable[[], bool] = lambda: False,
) -> Any:
    """`sup.call(method, params)`, asked again while the gateway answers busy and `running()`
    says no turn runs in the chat; the last refusal is raised."""
    for attempt in range(WIND_DOWN_ATTEMPTS):
        try:
            return await sup.call(method, params)
        except RpcError as exc:
            if exc.code != SESSION_BUSY or running() or attempt == WIND_DOWN_ATTEMPTS - 1:
                raise
        await sleep(WIND_DOWN_WAIT)
    raise AssertionError("unreachable")  # pragma: no cover
