"""Earlier replies to a prompt (Regenerate, edit-and-resend), kept and put back on the reply.

A gateway's history holds only the newest reply to a prompt; the earlier ones live in the
client store, by the prompt's history row, and attach to the reply of the matching user row
whenever a list is sent (a snapshot, a history page, a restart), as sent attachments do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from desktop.core.disk.store import Store, prompt_key
from desktop.core.errors import StorageError
from desktop.core.keys import is_temp_key
from desktop.core.models import ChatMessage, ReplyVersion, Role

log = logging.getLogger(__name__)


def version_of(reply: ChatMessage, prompt: str) -> ReplyVersion:
    """`reply` as it now reads, kept as an earlier version of the answer to `prompt`."""
    model = str(reply.usage.get("model") or "")
    return ReplyVersion(reply.text, reply.status, reply.cause, model, prompt)


class ReplyVersions:
    """Each session's earlier replies by prompt row, read from the store when first asked."""

    def __init__(self, profile_id: str, store: Store) -> None:
        self._id = profile_id
        self._store = store
        self._by_key: dict[str, dict[int, tuple[ReplyVersion, ...]]] = {}
        # key -> (row, prompt): a prompt sent again whose bubble has no row yet.
        self._pending: dict[str, tuple[int, str]] = {}

    def keep(self, key: str, row: int, version: ReplyVersion, resent: str) -> None:
        """`version` is replaced by a new reply to the prompt at `row`, sent again as `resent`
        (its bubble carries the versions before the gateway lists it at `row`)."""
        known = self._of(key)
        try:
            self._store.add_reply_version(self._id, key, row, version)
        except StorageError as exc:
            log.warning("could not keep the earlier reply: %s", exc)
        known[row] = (*known.get(row, ()), version)
        self._pending[key] = (row, resent)

    def of_row(self, key: str, row: int) -> tuple[ReplyVersion, ...]:
        return self._of(key).get(row, ())

    def attach(
        self, key: str, messages: list[ChatMessage], row_of: Callable[[ChatMessage], int | None]
    ) -> None:
        """Give each turn's last reply the earlier versions kept for its prompt; `row_of`
        gives a message's history row (None for a bubble the gateway has not listed), asked
        only in a chat that has versions."""
        if is_temp_key(key):
            return
        kept = self._of(key)
        if not kept:
            return
        rows = [row_of(m) for m in messages]
        pending = self._pending.get(key)
        at: int | None = None  # the history row of the current turn's prompt
        reply: ChatMessage | None = None
        for m, row in zip([*messages, None], [*rows, None], strict=True):
            if m is None or m.role is Role.USER:
                if at is not None and reply is not None:
                    versions = kept.get(at, ())
                    if reply.versions != versions:
                        reply.versions = versions
                at, reply = None, None
                if m is None:
                    break
                if row is None and pending is not None:
                    if prompt_key(m.text) == prompt_key(pending[1]):
                        row = pending[0]
                elif pending is not None and row == pending[0]:
                    self._pending.pop(key, None)  # listed by the gateway now
                at = row if row in kept else None
            elif m.role is Role.ASSISTANT:
                reply = m

    def _of(self, key: str) -> dict[int, tuple[ReplyVersion, ...]]:
        known = self._by_key.get(key)
        if known is None:
            try:
                known = self._store.reply_versions(self._id, key)
            except StorageError as exc:
                log.warning("could not read the earlier replies: %s", exc)
                known = {}
            self._by_key[key] = known
        return known

    def forget(self, key: str) -> None:
        self._by_key.pop(key, None)
        self._pending.pop(key, None)
