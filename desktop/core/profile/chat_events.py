"""Gateway events about a session that reach the user directly: approvals, notices, unread marks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from desktop.common.methods import SESSIONS_CHANGED_EVENT
from desktop.core.chats.index import SessionIndex
from desktop.core.chats.router import SessionRouter
from desktop.core.listeners import Notify, notice

# A turn that ends while its session is not on screen adds one unread mark.
_ENDED = {"message.complete", "error"}


class SessionEvents:
    """Turns supervisor events of routed sessions into listener calls and unread marks.

    The conversation itself hears the same events through the router (approvals and questions
    are kept there, with the snapshots, and shown by the feed); this is what the rest of the
    window needs from them. Session-less broadcasts are heard here too (the router drops
    them): `sessions.changed` asks for the session list again (`on_list_changed`).
    """

    def __init__(
        self,
        router: SessionRouter,
        index: SessionIndex,
        notify: Notify,
        on_list_changed: Callable[[], None] | None = None,
    ) -> None:
        self._router = router
        self._index = index
        self._notify = notify
        self._on_list_changed = on_list_changed

    def on_supervisor_event(self, event: Any, epoch: int) -> None:
        etype = getattr(event, "type", "")
        if etype == SESSIONS_CHANGED_EVENT:
            if self._on_list_changed is not None:
                self._on_list_changed()
            return
        if etype != "notice" and etype not in _ENDED:
            return  # (a delta, of every chat streaming: nothing here)
        payload = getattr(event, "payload", {}) or {}
        key = self._key_for_runtime(getattr(event, "session_id", None))
        if key is None:
            return
        if etype == "notice":
            text = payload.get("text") or payload.get("message")
            if isinstance(text, str) and text:
                notice(self._notify, key, text)
        elif etype in _ENDED:
            self._index.turn_ended(key)

    def _key_for_runtime(self, runtime_id: Any) -> str | None:
        if not isinstance(runtime_id, str):
            return None
        return self._router.key_for_runtime(runtime_id)
