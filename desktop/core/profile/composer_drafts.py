"""One profile's composer drafts in the shared DraftKeeper: load, save, restore and undo."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from desktop.core.disk.drafts import DraftKeeper
from desktop.core.disk.store import DraftRecord, OutboxEntry, Store
from desktop.core.errors import StorageError
from desktop.core.keys import draft_key, split_draft_key
from desktop.core.listeners import Notify
from desktop.core.models import Attachment, Draft

log = logging.getLogger(__name__)


def _draft(record: DraftRecord) -> Draft:
    return Draft(record.text, record.cursor, record.attachments, record.quote, record.quote_from)


class ComposerDrafts:
    """The drafts of this profile's sessions, keyed apart from other profiles'.

    A draft left by a previous run is announced as restored (`on_draft_restored`) the first
    time it is loaded; undelivered prompts come back here through the outbox.
    """

    def __init__(self, profile_id: str, drafts: DraftKeeper, store: Store, notify: Notify) -> None:
        self._id = profile_id
        self._drafts = drafts
        self._notify = notify
        prefix = draft_key(profile_id, "")
        self._left = {
            d.session_key[len(prefix) :]
            for d in store.drafts()
            if d.session_key.startswith(prefix) and not d.empty
        }
        self._unsub: Callable[[], None] = drafts.on_save_state(self._on_drafts_save_state)

    def close(self) -> None:
        self._unsub()

    def load(self, key: str) -> Draft | None:
        record = self._drafts.load(draft_key(self._id, key))
        if record.empty:
            return None
        draft = _draft(record)
        if key in self._left:
            self._left.discard(key)
            self._notify(lambda listener: listener.on_draft_restored(key, draft))
        return draft

    def save(
        self,
        key: str,
        text: str,
        cursor: int,
        attachments: tuple[Attachment, ...],
        *,
        quote: str = "",
        quote_from: str = "",
    ) -> None:
        self._drafts.update(
            draft_key(self._id, key), text, cursor, attachments, quote=quote, quote_from=quote_from
        )

    def clear_if_holds(self, key: str, text: str) -> None:
        """Empty the composer if it holds `text` (a prompt being sent again from its bubble)."""
        record = self._drafts.load(draft_key(self._id, key))
        if record.text.strip() == text.strip():
            self._drafts.update(draft_key(self._id, key), "", 0, ())

    def undo_restore(self, key: str) -> Draft | None:
        record = self._drafts.undo_restore(draft_key(self._id, key))
        return _draft(record) if record else None

    def adopt(self, temp_key: str, real_key: str) -> None:
        """The gateway created `temp_key` as `real_key`: the draft moves along."""
        self._drafts.adopt(draft_key(self._id, temp_key), draft_key(self._id, real_key))

    def on_outbox_restore(self, entry: OutboxEntry) -> bool:
        """Put an undelivered prompt of this profile back in its composer; False when that
        could not be saved."""
        key = entry.session_key
        try:
            result = self._drafts.restore(draft_key(self._id, key), entry.text, entry.attachments)
        except StorageError as exc:
            log.warning("could not restore a prompt to the composer: %s", exc)
            return False
        error = entry.error or "delivery not confirmed"
        draft = _draft(result.draft)
        self._notify(lambda listener: listener.on_prompt_restored(key, draft, error))
        return True

    def _on_drafts_save_state(self, drafts_key: str, saved: bool, error: Any) -> None:
        profile, key = split_draft_key(drafts_key)
        if profile == self._id:
            self._notify(
                lambda listener: listener.on_draft_save_state(
                    key, saved, str(error) if error else ""
                )
            )
