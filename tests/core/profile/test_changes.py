"""A Settings save: a renamed profile keeps its connection, any other change reconnects it."""

from __future__ import annotations

from dataclasses import replace

from desktop.core.link.profiles import Profile, ProfileKind, TlsOptions
from desktop.core.profile.changes import profile_changes

HOME = Profile(id="home", name="Home", kind=ProfileKind.REMOTE, url="wss://home.test/api/ws")
WORK = Profile(id="work", name="Work", kind=ProfileKind.REMOTE, url="wss://work.test/api/ws")


def test_a_new_name_only_renames_and_the_connection_stays_up() -> None:
    changes = profile_changes({"home": HOME}, {"home": replace(HOME, name="House")}, set())
    assert changes.renamed == {"home": "House"}
    assert changes.closed == []


def test_a_changed_address_tls_or_new_token_closes_the_profile_to_reopen_it() -> None:
    before = {"home": HOME, "work": WORK}
    moved = {"home": replace(HOME, url="wss://elsewhere.test/api/ws"), "work": WORK}
    assert profile_changes(before, moved, set()).closed == ["home"]
    no_tls_check = {"home": HOME, "work": replace(WORK, tls=TlsOptions(verify=False))}
    assert profile_changes(before, no_tls_check, set()).closed == ["work"]
    # A token is not part of the saved profile: typing one is the only sign of the change.
    assert profile_changes(before, before, {"work"}).closed == ["work"]
    assert profile_changes(before, before, set()).closed == []


def test_a_removed_profile_is_closed_and_a_new_one_left_to_be_opened() -> None:
    changes = profile_changes({"home": HOME}, {"work": WORK}, set())
    assert changes.closed == ["home"]
    assert changes.renamed == {}
