"""What a profile does each time its sessions are re-attached: create, settle, send, refresh."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, Protocol

from desktop.core.delivery.outbox import ReconcileResult
from desktop.core.errors import GatewayError, StorageError

log = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, Any]], None]


class Settling(Protocol):
    """What the catch-up needs of the outbox, for one profile's prompts."""

    def unconfirmed_sessions(self, profile_id: str) -> set[str]: ...
    def reconcile(
        self,
        session_key: str,
        snapshot: Mapping[str, Any],
        history: Mapping[str, Any] | None = None,
        *,
        profile_id: str | None = None,
    ) -> ReconcileResult: ...
    async def reconcile_via(self, profile_id: str, session_key: str) -> ReconcileResult: ...
    def on_online(self, profile_id: str | None = None) -> None: ...


class OnlineCatchUp:
    """Runs once per connection epoch, after the router re-attached every routed session.

    In order: sessions typed into offline are created (`create_waiting`), prompts whose
    delivery is uncertain are settled against the snapshots just received (or the history),
    queued prompts are sent, and the session list is refreshed (`refresh_list`). A result from
    an older epoch is dropped.

    What the window is sent after a snapshot is the feed's (`ConversationFeed.on_router_snapshot`);
    this keeps each session's latest snapshot to settle its prompts against.
    """

    def __init__(
        self,
        profile_id: str,
        *,
        epoch: Callable[[], int],
        blocked: Callable[[str], bool],
        outbox: Settling,
        create_waiting: Callable[[], None],
        refresh_list: Callable[[int], Awaitable[None]],
        spawn: Spawn,
        tell: Callable[[str, str], None],
    ) -> None:
        self._id = profile_id
        self._epoch = epoch  # the connection epoch now
        self._blocked = blocked  # a session whose snapshot closes the socket
        self._outbox = outbox
        self._create_waiting = create_waiting  # sessions typed into offline: created first
        self._refresh_list = refresh_list
        self._spawn = spawn
        self._tell = tell
        self._snapshots: dict[str, dict[str, Any]] = {}  # session key -> latest snapshot
        self._closed = False

    def close(self) -> None:
        """From now on a finished re-attachment starts nothing."""
        self._closed = True

    def on_router_synced(self, epoch: int) -> None:
        if self._closed or epoch != self._epoch():
            return
        self._spawn(self._after_online(epoch))

    def keep_snapshot(self, key: str, snapshot: dict[str, Any]) -> None:
        """The router took a snapshot of `key`: unconfirmed prompts are settled against it."""
        self._snapshots[key] = snapshot

    async def _after_online(self, epoch: int) -> None:
        self._create_waiting()
        await self._reconcile_unconfirmed(epoch)
        self._outbox.on_online(self._id)
        await self._refresh_list(epoch)

    async def _reconcile_unconfirmed(self, epoch: int) -> None:
        for key in self._outbox.unconfirmed_sessions(self._id):
            if epoch != self._epoch():
                return
            snapshot = self._snapshots.pop(key, None)
            if self._blocked(key):
                continue  # its snapshot closes the socket: asking for it again would loop
            try:
                if snapshot is not None:
                    result = self._outbox.reconcile(key, snapshot, profile_id=self._id)
                    if not result.unresolved:
                        continue
                await self._outbox.reconcile_via(self._id, key)
            except GatewayError as exc:
                log.info("reconciling %s failed: %s", key, exc)  # the next connect settles it
            except StorageError as exc:
                # Not a connection problem: the user hears of it, the other sessions go on.
                log.warning("settling the prompts of %s failed: %s", key, exc)
                self._tell(key, f"could not record the delivery: {exc}")
