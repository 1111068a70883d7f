"""Stop, pressed while a reply runs: sent at once, or as soon as the connection is back.

Pressed while the link is down (or lost while the stop was on its way), the stop is kept: once
the router has reactivated the chats after the reconnect, a chat whose turn still runs on the
gateway is stopped then; one whose turn ended meanwhile needs nothing. Either way the notice
says what happens in words, never a method name.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from desktop.common.methods import SESSION_INTERRUPT
from desktop.core.chats.conversation import Conversation
from desktop.core.errors import GatewayError, RpcError
from desktop.core.listeners import Notify, notice

log = logging.getLogger(__name__)

NOT_CONNECTED = "Not connected: the reply is stopped as soon as the connection is back"


class StopRequests:
    """The profile's Stop: `stop(key)` now or after the next reconnect (`on_router_synced`)."""

    def __init__(
        self,
        *,
        call: Callable[[str, dict[str, Any]], Awaitable[Any]],
        online: Callable[[], bool],
        runtime_id: Callable[[str], str | None],
        conversation: Callable[[str], Conversation | None],
        notify: Notify,
        spawn: Callable[[Coroutine[Any, Any, None]], None],
    ) -> None:
        self._call = call
        self._online = online
        self._runtime_id = runtime_id
        self._conversation = conversation
        self._notify = notify
        self._spawn = spawn
        self._waiting: set[str] = set()  # chats to stop once the connection is back

    def stop(self, key: str) -> None:
        """The user pressed Stop in chat `key` (its conversation already knows)."""
        runtime = self._runtime_id(key)
        if not runtime:
            return
        if not self._online():
            self._waiting.add(key)
            notice(self._notify, key, NOT_CONNECTED)
            return
        self._spawn(self._send(key, runtime))

    def on_router_synced(self, _epoch: int) -> None:
        """Every chat is reactivated after a reconnect: the kept stops go out now."""
        keys, self._waiting = self._waiting, set()
        for key in keys:
            conv = self._conversation(key)
            runtime = self._runtime_id(key)
            if conv is not None and conv.running and runtime:
                self._spawn(self._send(key, runtime, kept=True))
            else:
                notice(self._notify, key, "")  # its turn ended meanwhile: nothing to stop

    async def _send(self, key: str, runtime: str, *, kept: bool = False) -> None:
        try:
            await self._call(SESSION_INTERRUPT, {"session_id": runtime})
        except RpcError as exc:
            # The gateway answered: no stop to keep (the turn was over, or it cannot).
            log.info("stopping %s refused: %s", key, exc)
            notice(self._notify, key, f"The reply could not be stopped: {exc.message}")
            return
        except GatewayError as exc:
            log.info("stopping %s failed: %s", key, exc)  # the link went: kept for its return
            self._waiting.add(key)
            notice(self._notify, key, NOT_CONNECTED)
            return
        if kept:
            notice(self._notify, key, "")  # the notice said it would be: it is
