"""Sessions typed into before the gateway has them: created there once, then adopted locally."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Iterator
from typing import Protocol

from desktop.core.chats.index import NEW_CHAT, SessionState
from desktop.core.errors import GatewayError, StorageError
from desktop.core.keys import is_temp_key, new_temp_key
from desktop.core.models import SessionSummary

log = logging.getLogger(__name__)


class TempList(Protocol):
    """What temporary sessions need of the session list: their rows."""

    def get(self, key: str) -> SessionState | None: ...
    def add(self, summary: SessionSummary) -> SessionState: ...
    def emit(self) -> None: ...
    def __iter__(self) -> Iterator[str]: ...


class TempSessions:
    """Owns temporary session keys: one `session.create` each, then the move to the real key.

    A temporary key stays valid after the move (an alias), for intents still in flight. What
    else is kept under the temporary key (its conversation, draft, queued bubbles) is the
    owner's to move: `created(temp_key, real_key)` is called once the gateway made it.
    """

    def __init__(
        self,
        *,
        listing: TempList,
        start_chat: Callable[[str], object],
        create: Callable[[str | None], Awaitable[str]],
        created: Callable[[str, str], None],
        is_online: Callable[[], bool],
        now: Callable[[], float],
        tell: Callable[[str, str], None],
    ) -> None:
        self._listing = listing
        self._start_chat = start_chat  # a conversation for a key the gateway does not have
        self._create = create  # session.create with this title (None: untitled) -> real key
        self._created = created  # (temporary key, real key)
        self._is_online = is_online
        self._now = now
        self._tell = tell
        self._creating: dict[str, asyncio.Task[str | None]] = {}
        # Temporary keys made on the gateway by something else than session.create (a branch).
        self._makers: dict[str, Callable[[], Awaitable[str]]] = {}
        self._aliases: dict[str, str] = {}  # temporary key of a created session -> real key

    def resolve(self, key: str) -> str:
        """The key `key` is known by now (the real one once the gateway created it)."""
        return self._aliases.get(key, key)

    def new(self) -> str:
        """List a new empty session; the gateway creates it when online."""
        key = new_temp_key()
        self._listing.add(SessionSummary(key=key, title=NEW_CHAT, updated_at=self._now()))
        self._start_chat(key)
        self._listing.emit()
        if self._is_online():
            self.ensure_created(key)
        return key

    def new_made_by(self, make: Callable[[], Awaitable[str]], title: str) -> str:
        """List a new session that `make` creates on the gateway (its real key), now."""
        key = new_temp_key()
        self._listing.add(SessionSummary(key=key, title=title, updated_at=self._now()))
        self._start_chat(key)
        self._makers[key] = make
        self._listing.emit()
        self.ensure_created(key)
        return key

    def ensure_created(self, temp_key: str) -> None:
        """Start creating `temp_key` on the gateway unless that is already under way."""
        if temp_key in self._creating or self._listing.get(temp_key) is None:
            return
        task = asyncio.get_running_loop().create_task(self._make(temp_key))
        self._creating[temp_key] = task

    def create_waiting(self, waiting: Collection[str]) -> None:
        """Back online: create every temporary session that has prompts `waiting`."""
        for key in list(self._listing):
            if is_temp_key(key) and key in waiting:
                self.ensure_created(key)

    async def aclose(self) -> None:
        tasks = list(self._creating.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _make(self, temp_key: str) -> str | None:
        try:
            state = self._listing.get(temp_key)
            title = state.summary.title if state and state.summary.title != NEW_CHAT else None
            make = self._makers.get(temp_key)
            real_key = await (make() if make is not None else self._create(title))
            self._makers.pop(temp_key, None)
        except GatewayError as exc:
            if temp_key in self._makers:
                self._tell(temp_key, f"Not branched: {exc}")
                return None
            log.info("creating a session failed: %s", exc)  # created on the next connect
            return None
        except StorageError as exc:
            log.warning("recording a new session failed: %s", exc)
            self._tell(temp_key, f"could not save the new chat: {exc}")
            return None
        finally:
            self._creating.pop(temp_key, None)
        self._aliases[temp_key] = real_key
        self._created(temp_key, real_key)
        return real_key
