"""Profiles: URL rules (no token in clear to a remote host), token storage, epoch file safety."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from desktop.core.errors import InsecureTransportError
from desktop.core.link.epochs import FileEpochStore
from desktop.core.link.profiles import (
    FileTokenStore,
    KeyringTokenStore,
    Profile,
    ProfileError,
    ProfileKind,
    TlsOptions,
    validate_url,
)


@pytest.mark.parametrize(
    "url",
    [
        "ws://127.0.0.1:8080/api/ws",
        "ws://localhost:1/api/ws",
        "ws://[::1]:9/api/ws",
        "wss://gateway.example.org/api/ws",
    ],
)
def test_loopback_ws_and_any_wss_are_accepted(url: str) -> None:
    validate_url(url)


def test_plain_ws_to_a_remote_host_is_refused_unless_allowed() -> None:
    with pytest.raises(InsecureTransportError) as info:
        validate_url("ws://192.168.1.20:8080/api/ws")
    assert not info.value.is_retryable()
    validate_url("ws://192.168.1.20:8080/api/ws", allow_insecure=True)


@pytest.mark.parametrize("url", ["http://127.0.0.1/api/ws", "ws:///api/ws", "ws://h:99999/x", ""])
def test_malformed_urls_are_rejected(url: str) -> None:
    with pytest.raises(ProfileError):
        validate_url(url)


def test_profile_json_round_trip_never_contains_the_token(tmp_path: Path) -> None:
    tokens = FileTokenStore(tmp_path / "tokens.json")
    profile = Profile(
        id="work",
        name="Work",
        kind=ProfileKind.REMOTE,
        url="wss://gw.example.org/api/ws",
        token_ref="profile:work:1",
        tls=TlsOptions(verify=True, ca_file="/etc/ca.pem"),
    )
    tokens.set("profile:work:1", "s3cret-token")
    data = json.dumps(profile.to_json())
    assert "s3cret-token" not in data
    assert Profile.from_json(json.loads(data)) == profile
    assert tokens.get(profile.token_ref or "") == "s3cret-token"
    mode = stat.S_IMODE((tmp_path / "tokens.json").stat().st_mode)
    assert mode == 0o600
    tokens.delete("profile:work:1")
    assert tokens.get("profile:work:1") is None


def test_keyring_store_falls_back_to_the_file_when_no_keyring(tmp_path: Path) -> None:
    fallback = FileTokenStore(tmp_path / "tokens.json")
    store = KeyringTokenStore(fallback)  # the test suite runs with the null keyring
    store.set("r", "tok")
    assert store.get("r") == "tok" and fallback.get("r") == "tok"


def test_epoch_file_survives_corruption_without_going_backwards(tmp_path: Path) -> None:
    path = tmp_path / "epochs.json"
    store = FileEpochStore(path)
    for _ in range(5):
        store.next_epoch("p")
    path.write_text("{not json")  # torn by something else
    assert store.next_epoch("p") == 6  # what we hold is never forgotten
    assert FileEpochStore(path).current("p") == 6
    assert FileEpochStore(path).next_epoch("other") == 1
