"""Fetching a profile's session list from the gateway: after each reconnect, and on change."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from desktop.common.clock import TimerHandle
from desktop.common.memory import BIG_LIST, release_freed_memory
from desktop.common.methods import SESSION_LIST
from desktop.core.errors import GatewayError

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


class ListLink(Protocol):
    """What the refresh needs of the connection: its epoch and a call."""

    @property
    def epoch(self) -> int: ...
    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any: ...


class Listing(Protocol):
    """What the refresh needs of the session list: merge rows, then tell the window once."""

    def merge_listed(self, rows: list[Any], *, emit: bool = True) -> int: ...
    def emit(self) -> None: ...


class Timers(Protocol):
    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle: ...


class ListRefresh:
    """Owns `session.list`: paged fetches merged into the list, a result of an older epoch
    dropped, and a `sessions.changed` burst (Hermes 0.22) gathered into one fetch, so a session
    another client made shows without asking."""

    def __init__(
        self,
        *,
        link: ListLink,
        listing: Listing,
        timers: Timers,
        spawn: Spawn,
        release: Callable[[], object] = release_freed_memory,
    ) -> None:
        self._link = link
        self._release = release  # after a big list: the decoded rows' heap back to the system
        self._listing = listing
        self._timers = timers
        self._spawn = spawn
        self._closed = False
        # sessions.changed: the debounce timer, a refresh running, another one wanted after it.
        self._changed_timer: TimerHandle | None = None
        self._refreshing = False
        self._changed_again = False

    def close(self) -> None:
        """From now on nothing is fetched."""
        self._closed = True
        if self._changed_timer is not None:
            self._changed_timer.cancel()
            self._changed_timer = None

    def changed(self) -> None:
        """The gateway's session list changed: refetch it, once for a whole burst.

        The first signal starts a short timer and those within it ride along; one arriving
        while the refetch runs asks for one more after it (it may have missed that change).
        """
        if self._closed:
            return
        if self._refreshing:
            self._changed_again = True
        elif self._changed_timer is None:
            self._changed_timer = self._timers.call_later(LIST_CHANGED_DEBOUNCE, self._due)

    def _due(self) -> None:
        self._changed_timer = None
        if self._closed:
            return
        self._refreshing = True
        self._spawn(self._refresh_changed(self._link.epoch))

    async def _refresh_changed(self, epoch: int) -> None:
        try:
            await self.refresh(epoch)
        finally:
            self._refreshing = False
        if self._changed_again and not self._stale(epoch):
            self._changed_again = False
            self.changed()

    async def refresh(self, epoch: int) -> None:
        """Fetch the whole list in growing pages while connection epoch `epoch` lasts."""
        limit = FIRST_PAGE
        while True:
            try:
                result = await self._link.call(SESSION_LIST, {"limit": limit})
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
                changed += self._listing.merge_listed(rows[start : start + MERGE_CHUNK], emit=False)
            if changed or limit == FIRST_PAGE:
                self._listing.emit()
            # Fewer rows than asked for: that is all of them (or all this gateway will give).
            if len(rows) < limit or limit >= MAX_LISTED:
                if len(rows) >= BIG_LIST:
                    del rows, result
                    self._release()
                return
            limit = min(limit * PAGE_GROWTH, MAX_LISTED)

    def _stale(self, epoch: int) -> bool:
        return self._closed or epoch != self._link.epoch
