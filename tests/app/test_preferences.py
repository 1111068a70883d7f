"""Settings the dialog edits survive a restart, and no secret ever lands in a JSON file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from desktop.app.preferences import Preferences, settings_dict
from desktop.core.errors import InsecureTransportError
from desktop.core.link.profiles import FileTokenStore, ProfileKind
from desktop.gateway.providers.config import KeyStore
from desktop.ui.settings.values import AppSettings, ProfileSettings, ProviderSettings
from desktop.ui.settings.values import ProfileKind as UiKind


@pytest.fixture
def prefs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Preferences:
    # Provider keys go to the 0600 key file: the test keyring backend is the null one.
    monkeypatch.setattr(KeyStore, "default", classmethod(lambda cls, d: cls(d, None)))
    return Preferences(tmp_path, FileTokenStore(tmp_path / "tokens.json"))


SECRET_FILES = {"tokens.json", "provider-keys.json"}  # the 0600 fallbacks for a keyring


def _all_json(root: Path) -> str:
    return "".join(p.read_text() for p in root.glob("*.json") if p.name not in SECRET_FILES)


def test_fresh_install_has_the_embedded_profile(prefs: Preferences) -> None:
    profiles = prefs.profiles()
    assert [p.kind for p in profiles] == [ProfileKind.EMBEDDED]


def test_saved_settings_come_back_and_secrets_stay_out_of_json(
    prefs: Preferences, tmp_path: Path
) -> None:
    settings = prefs.load()
    settings.profiles.append(
        ProfileSettings("work", "Work", UiKind.REMOTE, "wss://gw.example:8443/api/ws", "tok-SECRET")
    )
    settings.providers = [
        ProviderSettings("main", "http://127.0.0.1:9/v1", "m1", "sk-SECRET"),
        ProviderSettings("backup", "http://127.0.0.1:8/v1", "m2"),
    ]
    settings.theme = "dark"
    settings.send_key = "ctrl_enter"
    prefs.save(settings)

    again = Preferences(tmp_path, FileTokenStore(tmp_path / "tokens.json")).load()
    assert [p.name for p in again.profiles] == ["This computer", "Work"]
    assert again.profiles[1].url == "wss://gw.example:8443/api/ws"
    assert again.profiles[1].token == ""  # never shown back
    assert [(p.name, p.model) for p in again.providers] == [("main", "m1"), ("backup", "m2")]
    assert (again.theme, again.send_key) == ("dark", "ctrl_enter")
    work = next(p for p in prefs.profiles() if p.id == "work")
    assert prefs.token(work) == "tok-SECRET"
    assert "SECRET" not in _all_json(tmp_path)
    for name in SECRET_FILES:
        assert (tmp_path / name).stat().st_mode & 0o077 == 0, f"{name} is readable by others"
    assert "SECRET" not in json.dumps(settings_dict(settings))


def test_an_insecure_remote_profile_is_refused_and_nothing_is_written(
    prefs: Preferences, tmp_path: Path
) -> None:
    settings = AppSettings(profiles=[ProfileSettings("x", "X", UiKind.REMOTE, "ws://10.1.2.3/ws")])
    with pytest.raises(InsecureTransportError):
        prefs.save(settings)
    assert not (tmp_path / "profiles.json").exists()


def test_renaming_a_provider_in_settings_keeps_its_key(prefs: Preferences, tmp_path: Path) -> None:
    from desktop.gateway.providers.config import read_settings

    settings = prefs.load()
    settings.providers = [ProviderSettings("main", "http://127.0.0.1:9/v1", "m1", "sk-SECRET")]
    prefs.save(settings)
    again = prefs.load()
    again.providers[0].name = "renamed"  # the key field stays empty: "saved; type to replace"
    prefs.save(again)
    (stored,) = read_settings(tmp_path)
    assert stored.name == "renamed"
    assert KeyStore(tmp_path, None).get(stored.key_ref) == "sk-SECRET"
