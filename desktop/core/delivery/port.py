"""The outbox's port to one profile's gateway: online once its sessions are re-attached."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from desktop.core.chats.router import SessionRouter
from desktop.core.link.dialect import Dialect
from desktop.core.link.supervisor import ConnectionSupervisor
from desktop.core.models import ConnectionState
from desktop.core.observers import Unsubscribe


class SupervisorPort:
    """The outbox's view of one profile: online only once the routed sessions are re-attached.

    Attaching a session (activate, on 4001 resume) is the session router's: the outbox asks
    it here, so the router adopts every new runtime id and the replies that follow show.
    """

    def __init__(self, supervisor: ConnectionSupervisor, router: SessionRouter) -> None:
        self._sup = supervisor
        self._router = router

    @property
    def dialect(self) -> Dialect | None:
        return self._sup.dialect

    def is_online(self) -> bool:
        return (
            self._sup.status.state is ConnectionState.ONLINE
            and self._router.synced_epoch == self._sup.epoch
        )

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> Any:
        return await self._sup.call(method, params, timeout=timeout)

    async def reattach(self, session_key: str, runtime_hint: str) -> dict[str, Any] | None:
        return await self._router.reattach(session_key, runtime_hint)

    async def resume(self, session_key: str) -> str | None:
        return await self._router.resume(session_key)

    def turn_state(self, session_key: str) -> tuple[bool, int] | None:
        """(running, turns ended so far) of the routed session; None when it is not routed."""
        conv = self._router.conversation(session_key)
        return None if conv is None else (conv.running, conv.turns_ended)

    def user_rows(self, session_key: str) -> int | None:
        """How many user rows the session's gateway history holds, as far as the client knows."""
        conv = self._router.conversation(session_key)
        return None if conv is None else conv.gateway_user_rows()

    def watch(self, session_key: str, callback: Callable[[], None]) -> Unsubscribe | None:
        """`callback()` on every change of the routed session's chat (None: not routed)."""
        conv = self._router.conversation(session_key)
        return None if conv is None else conv.add_listener(lambda _conv: callback())
