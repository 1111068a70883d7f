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
    settings.keep_awake = False
    settings.reading_width = 64
    prefs.save(settings)

    again = Preferences(tmp_path, FileTokenStore(tmp_path / "tokens.json")).load()
    assert [p.name for p in again.profiles] == ["This computer", "Work"]
    assert again.profiles[1].url == "wss://gw.example:8443/api/ws"
    assert again.profiles[1].token == ""  # never shown back
    assert [(p.name, p.model) for p in again.providers] == [("main", "m1"), ("backup", "m2")]
    assert (again.theme, again.send_key, again.keep_awake) == ("dark", "ctrl_enter", False)
    assert again.reading_width == 64
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


def _remote(pid: str, name: str) -> dict[str, object]:
    return {
        "id": pid,
        "name": name,
        "kind": "remote",
        "url": "wss://h.example/api/ws",
        "token_ref": f"profile:{pid}",
        "tls": {"verify": True, "ca_file": None},
    }


def test_one_profile_the_app_cannot_read_costs_only_that_profile(
    prefs: Preferences, tmp_path: Path
) -> None:
    """Two good remote profiles and one of a kind a newer version wrote: both good ones are
    offered, the third is shown with its reason, and saving any setting keeps all three."""
    future = {"id": "p3", "name": "Quantum box", "kind": "quantum", "qubits": 7}
    saved = [_remote("p1", "Work"), _remote("p2", "Home"), future]
    (tmp_path / "profiles.json").write_text(json.dumps(saved))
    assert [p.name for p in prefs.profiles()] == ["This computer", "Work", "Home"]
    settings = prefs.load()
    assert settings.unreadable_profiles == ["Quantum box: unknown profile kind 'quantum'"]
    settings.theme = "dark"  # the user changes something unrelated and saves
    prefs.save(settings)
    written = json.loads((tmp_path / "profiles.json").read_text())
    assert future in written  # as it was, every field
    assert [p["name"] for p in written if p.get("kind") == "remote"] == ["Work", "Home"]
    assert {p["token_ref"] for p in written if p.get("kind") == "remote"} == {
        "profile:p1",
        "profile:p2",
    }


def test_a_profile_with_a_malformed_field_is_set_aside_with_the_reason(
    prefs: Preferences, tmp_path: Path
) -> None:
    bad = {**_remote("p2", "Lab"), "tls": "yes please"}
    (tmp_path / "profiles.json").write_text(json.dumps([_remote("p1", "Work"), bad]))
    assert [p.name for p in prefs.profiles()] == ["This computer", "Work"]
    (aside,) = prefs.unreadable_profiles()
    assert aside.raw == bad and "TLS settings are text, not a set of options" in aside.reason


def test_a_profiles_file_that_is_not_a_list_is_kept_aside_before_a_save(
    prefs: Preferences, tmp_path: Path
) -> None:
    path = tmp_path / "profiles.json"
    path.write_text('{"profiles": "written by hand"}')
    assert [p.name for p in prefs.profiles()] == ["This computer"]
    prefs.save(prefs.load())
    assert (tmp_path / "profiles.json.unreadable").read_text() == '{"profiles": "written by hand"}'
    assert isinstance(json.loads(path.read_text()), list)


@pytest.mark.parametrize("content", ["null", "42", '"text"', "{not json"])
def test_a_providers_file_of_any_shape_reads_as_no_providers_and_is_kept(
    prefs: Preferences, tmp_path: Path, content: str
) -> None:
    path = tmp_path / "providers.json"
    path.write_text(content)
    settings = prefs.load()  # used to raise AttributeError on `null`
    assert settings.providers == []
    settings.providers = [ProviderSettings("Local", "http://127.0.0.1:1/v1", "m")]
    prefs.save(settings)
    assert (tmp_path / "providers.json.unreadable").read_text() == content
    assert [p.name for p in prefs.load().providers] == ["Local"]


def test_a_provider_entry_the_app_cannot_read_is_written_back(
    prefs: Preferences, tmp_path: Path
) -> None:
    odd = {"name": 5, "base_url": None}
    good = {"id": "a1", "name": "Local", "base_url": "http://127.0.0.1:1/v1", "model": "m"}
    (tmp_path / "providers.json").write_text(json.dumps({"version": 2, "providers": [good, odd]}))
    settings = prefs.load()
    assert [p.name for p in settings.providers] == ["Local"]
    prefs.save(settings)
    assert odd in json.loads((tmp_path / "providers.json").read_text())["providers"]
