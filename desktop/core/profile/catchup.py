"""What a profile does each time its sessions are re-attached: create, settle, send, refresh."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from desktop.common.clock import Clock, TimerHandle
from desktop.common.methods import SESSION_LIST
from desktop.core.chats.index import SessionIndex
from desktop.core.chats.router import SessionRouter
from desktop.core.delivery.outbox import Outbox
from desktop.core.errors import GatewayError, StorageError
from desktop.core.link.supervisor import ConnectionSupervisor
from desktop.core.listeners import Notify, notice

log = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, Any]], None]
# The list is fetched newest first with a growing `limit` (Hermes 0.19's session.list has no
# offset): the first page is what the window shows at once, later pages reach the rest of a
# long history, merged a chunk per loop turn so the window stays responsive meanwhile.
FIRST_PAGE = 200
PAGE_GROWTH = 5
MAX_LISTED = 100_000
MERGE_CHUNK = 250
# A `sessions.changed` burst (Hermes 0.22 sends one per state.db move, at most every 2 s, and
# several clients' turns move it often) is gathered this long into one `session.list`.
LIST_CHANGED_DEBOUNCE = 0.5


class OnlineCatchUp:
    """Runs once per connection epoch, after the router re-attached every routed session.

    In order: sessions typed into offline are created, prompts whose delivery is uncertain are
    settled against the snapshots just received (or the history), queued prompts are sent, and
    the session list is refreshed. A result from an older epoch is dropped.

    What the window is sent after a snapshot is the feed's (`ConversationFeed.on_router_snapshot`);
    this keeps each session's latest snapshot to settle its prompts against.

    The list is also refreshed when the gateway says it changed (`list_changed`, Hermes 0.22's
    `sessions.changed` broadcast): a session another client made shows without asking.
    """

    def __init__(
        self,
        profile_id: str,
        *,
        supervisor: ConnectionSupervisor,
        router: SessionRouter,
        index: SessionIndex,
        create_waiting: Callable[[], None],
        outbox: Outbox,
        spawn: Spawn,
        notify: Notify,
        clock: Clock,
    ) -> None:
        self._id = profile_id
        self._sup = supervisor
        self._router = router
        self._index = index
        self._create_waiting = create_waiting  # sessions typed into offline: created first
        self._outbox = outbox
        self._spawn = spawn
        self._notify = notify
        self._snapshots: dict[str, dict[str, Any]] = {}  # session key -> latest snapshot
        self._closed = False
        self._clock = clock
        # sessions.changed: the debounce timer, a refresh running, another one wanted after it.
        self._changed_timer: TimerHandle | None = None
        self._refreshing = False
        self._changed_again = False

    def close(self) -> None:
        """From now on a finished re-attachment starts nothing."""
        self._closed = True
        if self._changed_timer is not None:
            self._changed_timer.cancel()
            self._changed_timer = None

    def list_changed(self) -> None:
        """The gateway's session list changed: refetch it, once for a whole burst.

        The first signal starts a short timer and those within it ride along; one arriving
        while the refetch runs asks for one more after it (it may have missed that change).
        """
        if self._closed:
            return
        if self._refreshing:
            self._changed_again = True
        elif self._changed_timer is None:
            self._changed_timer = self._clock.call_later(LIST_CHANGED_DEBOUNCE, self._list_due)

    def _list_due(self) -> None:
        self._changed_timer = None
        if self._closed:
            return
        self._refreshing = True
        self._spawn(self._refresh_changed(self._sup.epoch))

    async def _refresh_changed(self, epoch: int) -> None:
        try:
            await self._refresh_list(epoch)
        finally:
            self._refreshing = False
        if self._changed_again and not self._stale(epoch):
            self._changed_again = False
            self.list_changed()

    def on_router_synced(self, epoch: int) -> None:
        if self._closed or epoch != self._sup.epoch:
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
            if epoch != self._sup.epoch:
                return
            snapshot = self._snapshots.pop(key, None)
            routed = self._router.session(key)
            if routed is not None and routed.blocked:
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
                notice(self._notify, key, f"could not record the delivery: {exc}")

    async def _refresh_list(self, epoch: int) -> None:
        limit = FIRST_PAGE
        while True:
            try:
                result = await self._sup.call(SESSION_LIST, {"limit": limit})
            except GatewayError as exc:
                log.info("session.list failed: %s", exc)
                return
            if self._stale(epoch) or not isinstance(result, dict):
                return
            rows = result.get("sessions") or []
            if not isinstance(rows, list):
                return
            changed = 0
            for start in range(0, len(rows), MERGE_CHUNK):
                if start:
                    await asyncio.sleep(0)
                    if self._stale(epoch):
                        return
                changed += self._index.merge_listed(rows[start : start + MERGE_CHUNK], emit=False)
            if changed or limit == FIRST_PAGE:
                self._index.emit()
            # Fewer rows than asked for: that is all of them (or all this gateway will give).
            if len(rows) < limit or limit >= MAX_LISTED:
                return
            limit = min(limit * PAGE_GROWTH, MAX_LISTED)

    def _stale(self, epoch: int) -> bool:
        return self._closed or epoch != self._sup.epoch
