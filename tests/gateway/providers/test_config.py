"""Provider settings round trip; keys live in the keyring or a 0600 file, never in the JSON."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from desktop.gateway.providers.config import (
    KEYRING_SERVICE,
    KeyStore,
    ProviderSettings,
    read_settings,
)
from desktop.gateway.providers.fallback import FallbackChain
from desktop.gateway.providers.offline import OfflineProvider
from desktop.gateway.providers.openai import OpenAICompatibleProvider
from desktop.gateway.providers.registry import load_provider, save_providers

SECRET = "sk-live-very-secret"


class MemoryKeyring:
    def __init__(self) -> None:
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


def settings() -> list[ProviderSettings]:
    return [
        ProviderSettings("main", "https://api.example.com/v1", "gpt-x", idle_timeout=45),
        ProviderSettings("local", "http://127.0.0.1:11434/v1", "llama"),
    ]


async def test_nothing_configured_gives_the_offline_model(tmp_path: Path) -> None:
    provider = load_provider(tmp_path)
    assert isinstance(provider, OfflineProvider)
    await provider.aclose()


async def test_round_trip_with_keyring_keeps_keys_out_of_the_file(tmp_path: Path) -> None:
    ring = MemoryKeyring()
    store = KeyStore(tmp_path, ring)
    saved = save_providers(tmp_path, settings(), {"main": SECRET}, keys=store)
    assert read_settings(tmp_path) == saved
    raw = (tmp_path / "providers.json").read_text()
    assert SECRET not in raw and json.loads(raw)["version"] == 1
    assert ring.items == {(KEYRING_SERVICE, "provider:main"): SECRET}
    assert not (tmp_path / "provider-keys.json").exists()

    chain = load_provider(tmp_path, keys=store)
    try:
        assert isinstance(chain, FallbackChain)
        primary, backup = chain.providers
        assert isinstance(primary, OpenAICompatibleProvider)
        assert (primary.name, primary.model, primary.idle_timeout) == ("main", "gpt-x", 45)
        assert primary._api_key == SECRET and backup.name == "local"
    finally:
        await chain.aclose()


def test_without_keyring_keys_go_to_a_private_file(tmp_path: Path) -> None:
    store = KeyStore(tmp_path, None)
    save_providers(tmp_path, settings(), {"main": SECRET, "local": "k2"}, keys=store)
    keys_file = tmp_path / "provider-keys.json"
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600
    assert SECRET not in (tmp_path / "providers.json").read_text()
    assert store.get("provider:main") == SECRET
    # Removing a provider forgets its key; None forgets a key explicitly.
    save_providers(tmp_path, settings()[:1], {"main": None}, keys=store)
    assert json.loads(keys_file.read_text()) == {}


def test_bare_list_from_version_0_is_read(tmp_path: Path) -> None:
    entry = {"name": "old", "base_url": "http://h/v1", "model": "m"}
    (tmp_path / "providers.json").write_text(json.dumps([entry, {"name": 3}]))
    assert read_settings(tmp_path) == [ProviderSettings("old", "http://h/v1", "m", "provider:old")]
