"""Session key conventions: temporary keys of sessions not yet created, per-profile draft keys."""

from __future__ import annotations

import uuid

TEMP_PREFIX = "new:"


def is_temp_key(key: str) -> bool:
    """A session typed into before the gateway created it."""
    return key.startswith(TEMP_PREFIX)


def new_temp_key() -> str:
    return f"{TEMP_PREFIX}{uuid.uuid4().hex}"


def draft_key(profile_id: str, key: str) -> str:
    """The DraftKeeper key of a session's composer.

    Drafts are keyed per profile so two gateways' session ids can never collide.
    """
    return f"{profile_id}|{key}"


def split_draft_key(drafts_key: str) -> tuple[str, str]:
    """(profile id, session key) of a DraftKeeper key made by `draft_key`."""
    profile, _, key = drafts_key.partition("|")
    return profile, key
