"""Sessions typed into before the gateway has them: created there once, then adopted locally."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from desktop.common.clock import Clock
from desktop.core.chats.index import NEW_CHAT, SessionIndex
from desktop.core.chats.router import SessionRouter
from desktop.core.delivery.outbox import Outbox
from desktop.core.errors import GatewayError, StorageError
from desktop.core.keys import is_temp_key, new_temp_key
from desktop.core.listeners import Notify, notice
from desktop.core.models import SessionSummary
from desktop.core.profile.feed import ConversationFeed

log = logging.getLogger(__name__)


class TempSessions:
    """Owns temporary session keys: one `session.create` each, then the move to the real key.

    A temporary key stays valid after the move (an alias), for intents still in flight; what
    else is kept under the temporary key (drafts, queued bubbles) is moved by `rekey`.
    """

    def __init__(
        self,
        profile_id: str,
        *,
        router: SessionRouter,
        index: SessionIndex,
        feed: ConversationFeed,
        rekey: Callable[[str, str], None],
        outbox: Outbox,
        clock: Clock,
        is_online: Callable[[], bool],
        notify: Notify,
    ) -> None:
        self._id = profile_id
        self._router = router
        self._index = index
        self._feed = feed
        self._rekey = rekey  # (temporary key, real key)
        self._outbox = outbox
        self._clock = clock
        self._is_online = is_online
        self._notify = notify
        self._creating: dict[str, asyncio.Task[str | None]] = {}
        self._aliases: dict[str, str] = {}  # temporary key of a created session -> real key

    def resolve(self, key: str) -> str:
        """The key `key` is known by now (the real one once the gateway created it)."""
        return self._aliases.get(key, key)

    def new(self) -> str:
        """List a new empty session; the gateway creates it when online."""
        key = new_temp_key()
        self._index.add(SessionSummary(key=key, title=NEW_CHAT, updated_at=self._clock.wall()))
        self._feed.start_temp(key)
        self._index.emit()
        if self._is_online():
            self.ensure_created(key)
        return key

    def ensure_created(self, temp_key: str) -> None:
        """Start creating `temp_key` on the gateway unless that is already under way."""
        if temp_key in self._creating or self._index.get(temp_key) is None:
            return
        task = asyncio.get_running_loop().create_task(self._create(temp_key))
        self._creating[temp_key] = task

    def create_waiting(self) -> None:
        """Back online: create every temporary session that has prompts waiting."""
        waiting = {e.session_key for e in self._outbox.entries(self._id)}
        for key in self._index:
            if is_temp_key(key) and key in waiting:
                self.ensure_created(key)

    async def aclose(self) -> None:
        tasks = list(self._creating.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _create(self, temp_key: str) -> str | None:
        try:
            state = self._index.get(temp_key)
            title = state.summary.title if state and state.summary.title != NEW_CHAT else None
            params: dict[str, Any] = {"title": title} if title else {}
            real_key = await self._router.create(**params)
        except GatewayError as exc:
            log.info("creating a session failed: %s", exc)  # created on the next connect
            return None
        except StorageError as exc:
            log.warning("recording a new session failed: %s", exc)
            notice(self._notify, temp_key, f"could not save the new chat: {exc}")
            return None
        finally:
            self._creating.pop(temp_key, None)
        self._adopt(temp_key, real_key)
        return real_key

    def _adopt(self, temp_key: str, real_key: str) -> None:
        temp_conv = self._feed.take_temp(temp_key)
        self._index.adopt(temp_key, real_key, self._router.runtime_id(real_key))
        self._rekey(temp_key, real_key)
        conv = self._router.conversation(real_key)
        if conv is not None:
            if temp_conv is not None:
                for message in temp_conv.messages:
                    conv.append_local(message)
            self._feed.watch(real_key, conv)
        self._aliases[temp_key] = real_key
        self._notify(lambda listener: listener.on_session_key_changed(temp_key, real_key))
        self._index.emit()
        self._outbox.on_online(self._id)
