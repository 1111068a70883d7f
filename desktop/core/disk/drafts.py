"""Draft persistence, its one home: composer drafts kept in memory and autosaved (debounced,
retried) so no keystroke is lost. (`core/profile/composer_drafts` is one profile's view of it.)"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from desktop.common.clock import Clock, TimerHandle
from desktop.common.retry import Retries, RetrySchedule
from desktop.core.disk.store import DraftRecord, Store, merge_drafts
from desktop.core.errors import StorageError
from desktop.core.models import Attachment
from desktop.core.observers import Observers, Unsubscribe

SaveListener = Callable[[str, bool, StorageError | None], None]

# Saves retried after a failure: 0.5 s, 1 s, 2 s ... 30 s, from 0.5 s again after one works.
SAVE_RETRY = RetrySchedule(first=0.5, cap=30.0)


@dataclass(frozen=True, slots=True)
class RestoreResult:
    """What `DraftKeeper.restore` did with a prompt that came back undelivered.

    `draft` is what the composer should show now. When the composer already held a newer
    non-empty draft, `merged` is True: that draft is kept first and the returned prompt is
    appended after a blank line (so nothing is lost and nothing is overwritten); the prompt is
    also given back as `text`/`attachments` so the UI can point at it.
    """

    draft: DraftRecord
    text: str
    attachments: tuple[Attachment, ...]
    merged: bool
    saved: bool


class DraftKeeper:
    """Owns every composer's draft: memory is authoritative, the store is its durable copy.

    Saves are debounced with one timer, rescheduled on each keystroke, and never postponed more
    than `max_delay` by continuous typing. A failed save flips the session's state to "not
    saved" (listeners), keeps the draft in memory and retries with exponential backoff.
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        debounce: float = 0.4,
        *,
        max_delay: float = 2.0,
        retry: RetrySchedule = SAVE_RETRY,
    ) -> None:
        self._store = store
        self._clock = clock
        self.debounce = debounce
        self.max_delay = max_delay
        self._retries = Retries(retry)
        self._drafts: dict[str, DraftRecord] = {}
        self._dirty: dict[str, float] = {}  # session key -> when it first became dirty
        self._saved: dict[str, bool] = {}
        self._undo: dict[str, DraftRecord] = {}
        self._listeners: Observers[SaveListener] = Observers("draft save state")
        self._timer: TimerHandle | None = None

    # -- listeners --------------------------------------------------------------------------

    def on_save_state(self, callback: SaveListener) -> Unsubscribe:
        """Call `callback(session_key, saved, error)` when a draft's saved state flips."""
        return self._listeners.subscribe(callback)

    def is_saved(self, session_key: str) -> bool:
        return session_key not in self._dirty

    # -- editing ----------------------------------------------------------------------------

    def update(
        self,
        session_key: str,
        text: str,
        cursor: int = 0,
        attachments: Iterable[Attachment] = (),
        *,
        quote: str = "",
        quote_from: str = "",
    ) -> DraftRecord:
        """Record a keystroke (or attachment or quote change); it is saved within `debounce`
        seconds."""
        try:
            prev = self._current(session_key)
        except StorageError:  # an unreadable store must not cost the user this keystroke
            prev = self._drafts.get(session_key) or DraftRecord(session_key)
        draft = DraftRecord(
            session_key,
            text,
            cursor,
            tuple(attachments),
            self._clock.wall(),
            prev.revision + 1,
            quote,
            quote_from,
        )
        self._drafts[session_key] = draft
        self._dirty.setdefault(session_key, self._clock.monotonic())
        self._schedule(self._debounce_deadline())
        return draft

    def load(self, session_key: str) -> DraftRecord:
        """The draft to show in the composer (empty when there is none)."""
        return self._current(session_key)

    def flush(self) -> bool:
        """Save every unsaved draft now; False (and a retry scheduled) if any save failed."""
        self._cancel_timer()
        ok = self._save_dirty()
        if not ok:
            self._schedule_retry()
        return ok

    def close(self) -> bool:
        """Flush and stop the timer (on shutdown); True when everything reached the disk."""
        ok = self._save_dirty()
        self._cancel_timer()
        return ok

    def adopt(self, temp_key: str, real_key: str) -> DraftRecord:
        """The session typed into as `temp_key` now exists as `real_key`: move its draft."""
        temp = self._drafts.pop(temp_key, None)
        self._dirty.pop(temp_key, None)
        self._saved.pop(temp_key, None)
        try:
            stored = self._store.adopt_draft(temp_key, real_key)
        except StorageError:
            stored = None
        if temp is not None:
            merged = merge_drafts(self._drafts.get(real_key), temp, real_key)
        else:
            merged = stored or self._current(real_key)
        self._drafts[real_key] = merged
        self._save_now(real_key)
        return merged

    # -- undelivered prompts ----------------------------------------------------------------

    def restore(
        self, session_key: str, text: str, attachments: Iterable[Attachment] = ()
    ) -> RestoreResult:
        """Put a prompt whose delivery failed back into the composer, saved at once.

        Never overwrites a non-empty draft (see RestoreResult); `undo_restore` reverts it.
        """
        atts = tuple(attachments)
        current = self._current(session_key)
        incoming = DraftRecord(session_key, text, len(text), atts, self._clock.wall(), 0)
        merged = not current.empty
        draft = merge_drafts(current, incoming, session_key)
        self._undo[session_key] = current
        self._drafts[session_key] = draft
        saved = self._save_now(session_key)
        return RestoreResult(draft, text, atts, merged, saved)

    def undo_restore(self, session_key: str) -> DraftRecord | None:
        """Bring back exactly the draft the last `restore` replaced; None if nothing to undo."""
        previous = self._undo.pop(session_key, None)
        if previous is None:
            return None
        now = self._current(session_key)
        self._drafts[session_key] = replace(previous, revision=now.revision + 1)
        self._save_now(session_key)
        return self._drafts[session_key]

    # -- internals --------------------------------------------------------------------------

    def _current(self, session_key: str) -> DraftRecord:
        draft = self._drafts.get(session_key)
        if draft is None:
            draft = self._store.draft(session_key) or DraftRecord(session_key)
            self._drafts[session_key] = draft
        return draft

    def _save_now(self, session_key: str) -> bool:
        self._dirty.setdefault(session_key, self._clock.monotonic())
        ok = self._save_one(session_key)
        if not ok:
            self._schedule_retry()
        return ok

    def _save_dirty(self) -> bool:
        ok = True
        for key in list(self._dirty):
            ok = self._save_one(key) and ok
        if ok:
            self._retries.reset()
        return ok

    def _save_one(self, key: str) -> bool:
        draft = self._drafts[key]
        try:
            self._store.save_draft(draft)
        except StorageError as exc:
            self._set_saved(key, False, exc)
            return False
        self._dirty.pop(key, None)
        self._set_saved(key, True, None)
        return True

    def _set_saved(self, key: str, saved: bool, error: StorageError | None) -> None:
        if self._saved.get(key, True) == saved:
            return
        self._saved[key] = saved
        self._listeners.emit(lambda listener: listener(key, saved, error))

    def _debounce_deadline(self) -> float:
        now = self._clock.monotonic()
        oldest = min(self._dirty.values(), default=now)
        return min(now + self.debounce, oldest + self.max_delay)

    def _schedule(self, when: float) -> None:
        self._cancel_timer()
        delay = max(0.0, when - self._clock.monotonic())
        self._timer = self._clock.call_later(delay, self._on_timer)

    def _schedule_retry(self) -> None:
        self._schedule(self._clock.monotonic() + self._retries.next_delay())

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_timer(self) -> None:
        self._timer = None
        if not self._save_dirty():
            self._schedule_retry()
