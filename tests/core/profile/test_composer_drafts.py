"""ComposerDrafts: one profile's drafts, restored once after a restart, prompts given back."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from desktop.common.clock import ManualClock
from desktop.core.disk.drafts import DraftKeeper
from desktop.core.disk.store import OutboxEntry, Store
from desktop.core.errors import StorageError, StorageFullError
from desktop.core.models import DeliveryState, Draft
from desktop.core.profile.composer_drafts import ComposerDrafts


class Heard:
    """The listener calls a helper made, as (method, args) pairs; it is the helper's notify."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __call__(self, call: Callable[[Any], object]) -> None:
        call(self)

    def __getattr__(self, name: str) -> Callable[..., None]:
        if not name.startswith("on_"):
            raise AttributeError(name)
        return lambda *args: self.calls.append((name, args))

    def of(self, method: str) -> list[tuple[Any, ...]]:
        return [args for name, args in self.calls if name == method]


@contextmanager
def opened(path: Path, profile_id: str = "p") -> Iterator[tuple[ComposerDrafts, Heard, Store]]:
    """A profile's drafts over the store at `path`, as one run of the app has them."""
    store = Store(str(path / "hermes-qt.sqlite3"))
    keeper = DraftKeeper(store, ManualClock())
    heard = Heard()
    drafts = ComposerDrafts(profile_id, keeper, store, heard)
    try:
        yield drafts, heard, store
    finally:
        drafts.close()
        keeper.close()
        store.close()


def _entry(profile_id: str, key: str, text: str, error: str = "") -> OutboxEntry:
    return OutboxEntry(
        submission_ref=f"ref-{text}",
        seq=1,
        profile_id=profile_id,
        session_key=key,
        runtime_id="r1",
        text=text,
        attachments=(),
        created_at=1.0,
        state=DeliveryState.FAILED,
        error=error,
    )


def test_a_draft_left_by_the_last_run_is_announced_restored_once(tmp_path: Path) -> None:
    with opened(tmp_path) as (drafts, _, _):
        drafts.save("s1", "half a thought", 4, ())
    with opened(tmp_path, "q") as (drafts, _, _):
        drafts.save("s1", "another profile's draft", 0, ())

    with opened(tmp_path) as (drafts, heard, _):
        assert drafts.load("s1") == Draft("half a thought", 4, ())
        assert drafts.load("s1") == Draft("half a thought", 4, ())
        assert heard.of("on_draft_restored") == [("s1", Draft("half a thought", 4, ()))]
        assert drafts.load("s2") is None, "the other profile's s1 is not this one's"


def test_a_draft_typed_in_this_run_is_not_announced_as_restored(tmp_path: Path) -> None:
    with opened(tmp_path, "q") as (drafts, _, _):
        drafts.save("s1", "left in another profile's chat of the same id", 0, ())
    with opened(tmp_path) as (drafts, heard, _):
        drafts.save("s1", "typed just now", 14, ())
        assert drafts.load("s1") == Draft("typed just now", 14, ())
        assert heard.of("on_draft_restored") == []


def test_an_undelivered_prompt_comes_back_to_its_composer(tmp_path: Path) -> None:
    # Only this profile's entries reach it: test_outbox.py's per-profile listeners.
    with opened(tmp_path) as (drafts, heard, _):
        assert drafts.on_outbox_restore(_entry("p", "s1", "lost prompt", "gateway refused"))
        assert heard.of("on_prompt_restored") == [
            ("s1", Draft("lost prompt", len("lost prompt"), ()), "gateway refused")
        ]
        assert drafts.load("s1") == Draft("lost prompt", len("lost prompt"), ())
        # Undo gives the composer back what it held before: nothing.
        assert drafts.undo_restore("s1") == Draft("", 0, ())


def test_a_prompt_whose_composer_cannot_be_read_stays_queued(tmp_path: Path) -> None:
    with opened(tmp_path) as (drafts, heard, store):

        def unreadable(*_: Any) -> None:
            raise StorageError("could not read the draft: disk I/O error")

        store.draft = unreadable  # type: ignore[method-assign]
        # False: the outbox keeps the entry (and its bubble) rather than lose the prompt.
        assert drafts.on_outbox_restore(_entry("p", "s1", "lost prompt")) is False
        assert heard.of("on_prompt_restored") == []


def test_save_state_news_reaches_only_the_profile_it_concerns(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "hermes-qt.sqlite3"))
    keeper = DraftKeeper(store, ManualClock())  # one keeper, shared by every profile
    mine, theirs = Heard(), Heard()
    drafts = ComposerDrafts("p", keeper, store, mine)
    other = ComposerDrafts("q", keeper, store, theirs)
    healthy = store.save_draft
    try:

        def full(*_: Any) -> None:
            raise StorageFullError("could not save the draft: the disk is full")

        store.save_draft = full  # type: ignore[method-assign]
        drafts.save("s1", "unsaved", 7, ())
        assert keeper.flush() is False
        store.save_draft = healthy  # type: ignore[method-assign]
        assert keeper.flush() is True
        assert mine.of("on_draft_save_state") == [
            ("s1", False, "could not save the draft: the disk is full"),
            ("s1", True, ""),
        ]
        assert theirs.of("on_draft_save_state") == []
    finally:
        drafts.close()
        other.close()
        keeper.close()
        store.close()
