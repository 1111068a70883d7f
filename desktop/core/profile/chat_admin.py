"""Deleting and renaming a chat on the gateway, each by the id that gateway expects.

Hermes (0.19, 0.20.1, 0.22) and the embedded gateway agree on the ids: `session.delete` takes the
STORED id (the list's key; a runtime id is "session not found", 4007) and `session.title` the
RUNTIME id (a stored id is 4001). Hermes refuses to delete a session still loaded in its memory
(attached, running, or detached and not reaped yet) with 4023: an idle one is closed first
(`session.close` by runtime id), a running one is left alone and the user told to stop it.

A chat leaves the list only once the gateway deleted it, so it cannot come back with the next
`session.list`; a refusal keeps it listed and says why in words. Offline, nothing is changed
locally that the gateway would undo on the next connect: the user is told to try again online.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from desktop.common.codes import RESUME_TARGET_NOT_FOUND, SESSION_LIVE, SESSION_NOT_FOUND
from desktop.common.methods import SESSION_CLOSE, SESSION_DELETE, SESSION_TITLE
from desktop.core.chats.conversation import Conversation
from desktop.core.chats.index import SessionIndex
from desktop.core.chats.router import SessionRouter
from desktop.core.errors import GatewayError, RpcError
from desktop.core.keys import is_temp_key
from desktop.core.link.supervisor import ConnectionSupervisor

log = logging.getLogger(__name__)

# Hermes: `session.title` refused the name (a ValueError there: another chat has it).
TITLE_REFUSED = 4022


def _name(title: str) -> str:
    return f"“{title}”" if title else "This chat"


class AdminChats(Protocol):
    """What deleting needs of the profile's conversations (the feed)."""

    def get(self, key: str) -> Conversation | None: ...
    def route(self, key: str) -> Conversation: ...
    def forget(self, key: str) -> None: ...


class ChatAdmin:
    """Owns the delete and rename intents of one profile's chats.

    A chat deleted here leaves the list; what else was kept of it (its conversation, its
    queued bubbles) is the owner's to drop: `removed(key)`.
    """

    def __init__(
        self,
        *,
        supervisor: ConnectionSupervisor,
        router: SessionRouter,
        index: SessionIndex,
        chats: AdminChats,
        removed: Callable[[str], None],
        is_online: Callable[[], bool],
        spawn: Callable[[Coroutine[Any, Any, Any]], None],
        tell: Callable[[str, str], None],
    ) -> None:
        self._sup = supervisor
        self._router = router
        self._index = index
        self._chats = chats
        self._removed = removed
        self._is_online = is_online
        self._spawn = spawn
        self._tell = tell
        self._deleting: set[str] = set()

    # -- delete --------------------------------------------------------------------------------

    def delete(self, key: str) -> None:
        state = self._index.get(key)
        if state is None or key in self._deleting:
            return
        if is_temp_key(key):
            self._remove_locally(key)  # the gateway never had it
            return
        name = _name(state.summary.title)
        conv = self._chats.get(key)
        if conv is not None and conv.running:
            self._tell(key, f"{name} is still running; stop it first, then delete it.")
            return
        if not self._is_online():
            self._tell(key, f"{name} can be deleted once connected to the gateway.")
            return
        self._deleting.add(key)
        self._spawn(self._delete(key, name))

    async def _delete(self, key: str, name: str) -> None:
        try:
            refusal = await self._delete_remote(key, name)
        except GatewayError as exc:
            log.info("deleting %s failed: %s", key, exc)
            refusal = f"{name} could not be deleted: {_reason(exc)}"
        finally:
            self._deleting.discard(key)
        if refusal:
            self._tell(key, refusal)
            if self._index.viewed(key) and self._router.session(key) is None:
                # Still listed and on screen: follow it again (the close unrouted it).
                self._spawn(self._reopen(key))
            return
        self._remove_locally(key)

    async def _delete_remote(self, key: str, name: str) -> str:
        """Delete `key` on the gateway; "" when it is gone there, else why not, for the user."""
        runtime = self._router.runtime_id(key)
        if runtime:
            # Loaded by us: close it first (Hermes refuses to delete a loaded session). Unrouted
            # first, so a reconnect in between does not load it again.
            self._chats.forget(key)
            await self._close(runtime)
        try:
            await self._sup.call(SESSION_DELETE, {"session_id": key})
            return ""
        except RpcError as exc:
            if exc.code == RESUME_TARGET_NOT_FOUND:
                return ""  # already deleted (elsewhere, or by a call whose answer was lost)
            if exc.code != SESSION_LIVE:
                raise
        # Loaded by someone else, or by an earlier run of this app and not reaped yet: resume
        # it to learn its runtime id and whether a turn runs there.
        snap = await self._router.reattach(key)
        if snap is None:
            return ""
        if snap.get("running") or snap.get("status") in ("working", "waiting", "starting"):
            return f"{name} is still running on the gateway; stop it first, then delete it."
        live = snap.get("session_id")
        if isinstance(live, str) and live:
            await self._close(live)
        try:
            await self._sup.call(SESSION_DELETE, {"session_id": key})
        except RpcError as exc:
            if exc.code == RESUME_TARGET_NOT_FOUND:
                return ""
            if exc.code == SESSION_LIVE:
                return f"{name} is open elsewhere; close it there, then delete it."
            raise
        return ""

    async def _close(self, runtime: str) -> None:
        try:
            await self._sup.call(SESSION_CLOSE, {"session_id": runtime})
        except RpcError as exc:
            if exc.code != SESSION_NOT_FOUND:
                raise  # 4001: reaped already, nothing to close

    async def _reopen(self, key: str) -> None:
        self._chats.route(key)
        try:
            await self._router.open(key)
        except GatewayError as exc:
            log.info("reopening %s failed: %s", key, exc)

    def _remove_locally(self, key: str) -> None:
        self._index.forget_listed(key)
        if not self._index.remove(key):
            return
        self._removed(key)
        self._index.emit()

    # -- rename --------------------------------------------------------------------------------

    def rename(self, key: str, title: str) -> None:
        state = self._index.get(key)
        if state is None:
            return
        if is_temp_key(key):
            # Created with it (the gateway titles it after).
            self._index.rename(key, title, user_title=title)
            return
        if not self._is_online():
            # The next session.list would put the gateway's title back: say so instead.
            name = _name(state.summary.title)
            self._tell(key, f"{name} can be renamed once connected to the gateway.")
            return
        old, old_user = state.summary.title, self._index.user_title(key)
        self._index.rename(key, title, user_title=title)  # it wins over the gateway's titles
        self._spawn(self._rename(key, title, old, old_user))

    async def _rename(self, key: str, title: str, old: str, old_user: str) -> None:
        try:
            await self._title(key, title)
        except GatewayError as exc:
            log.info("renaming %s failed: %s", key, exc)
            if isinstance(exc, RpcError) and exc.code == TITLE_REFUSED:
                why = f"the gateway refused the name ({exc.message})"
            else:
                why = _reason(exc)
            self._index.rename(key, old, user_title=old_user)
            self._tell(key, f"{_name(old)} could not be renamed: {why}")

    async def _title(self, key: str, title: str) -> None:
        runtime = self._router.runtime_id(key)
        if runtime:
            try:
                await self._sup.call(SESSION_TITLE, {"session_id": runtime, "title": title})
                return
            except RpcError as exc:
                if exc.code != SESSION_NOT_FOUND:
                    raise
        # Not loaded by us (a chat picked in the list only): the runtime id comes from an
        # activate by the last one known, or a resume by stored id.
        snap = await self._router.reattach(key, self._index.runtime_id(key) or "")
        live = snap.get("session_id") if snap else None
        if not isinstance(live, str) or not live:
            raise RpcError(RESUME_TARGET_NOT_FOUND, "the chat is gone from the gateway")
        await self._sup.call(SESSION_TITLE, {"session_id": live, "title": title})


def _reason(exc: GatewayError) -> str:
    if isinstance(exc, RpcError):
        return exc.message or str(exc)
    return "the connection dropped; try again"
