"""What a Settings save changed in the profiles: which to rename, which to close and reopen."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from desktop.core.link.profiles import Profile


@dataclass(frozen=True, slots=True)
class ProfileChanges:
    # Profile id -> its new name: only the label changes, the connection stays up.
    renamed: dict[str, str] = field(default_factory=dict)
    # Removed, or changed in anything but the name (URL, TLS, token...): closed, and reopened
    # with the new settings when it still exists.
    closed: list[str] = field(default_factory=list)


def profile_changes(
    before: Mapping[str, Profile], after: Mapping[str, Profile], typed_tokens: Collection[str]
) -> ProfileChanges:
    """`before`/`after`: profiles by id; `typed_tokens`: ids the user gave a new token (a token
    is not part of the saved profile, so it would not show as a change)."""
    changes = ProfileChanges()
    for pid, old in before.items():
        new = after.get(pid)
        if new is not None and new.name != old.name:
            changes.renamed[pid] = new.name
        unchanged = (
            new is not None
            and pid not in typed_tokens
            and {**new.to_json(), "name": ""} == {**old.to_json(), "name": ""}
        )
        if not unchanged:
            changes.closed.append(pid)
    return changes
