"""The outbox's port to one profile's gateway: online once its sessions are re-attached."""

from __future__ import annotations

from typing import Any

from desktop.core.chats.router import SessionRouter
from desktop.core.link.dialect import Dialect
from desktop.core.link.supervisor import ConnectionSupervisor
from desktop.core.models import ConnectionState


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
