"""Provider settings round trip; keys live in the keyring or a 0600 file, never in the JSON."""

from __future__ import annotations

import json
import stat
from dataclasses import replace
from pathlib import Path

from desktop.gateway.providers.base import ChatMessage
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
from tests.support.fake_openai import FakeOpenAIServer

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
        ProviderSettings("main", "https://api.example.com/v1", "gpt-x", idle_timeout=45, id="m"),
        ProviderSettings("local", "http://127.0.0.1:11434/v1", "llama", id="l"),
    ]


async def test_nothing_configured_gives_the_offline_model(tmp_path: Path) -> None:
    provider = load_provider(tmp_path)
    assert isinstance(provider, OfflineProvider)
    await provider.aclose()


async def test_round_trip_with_keyring_keeps_keys_out_of_the_file(tmp_path: Path) -> None:
    ring = MemoryKeyring()
    store = KeyStore(tmp_path, ring)
    saved = save_providers(tmp_path, settings(), {"m": SECRET}, keys=store)
    assert read_settings(tmp_path) == saved
    raw = (tmp_path / "providers.json").read_text()
    assert SECRET not in raw and json.loads(raw)["version"] == 2
    assert ring.items == {(KEYRING_SERVICE, "provider-id:m"): SECRET}
    assert not (tmp_path / "provider-keys.json").exists()

    chain = load_provider(tmp_path, keys=store)
    try:
        assert isinstance(chain, FallbackChain)
        primary, backup = chain.providers
        assert isinstance(primary, OpenAICompatibleProvider)
        assert (primary.name, primary.model, primary.idle_timeout) == ("main", "gpt-x", 45)
        assert backup.name == "local"
    finally:
        await chain.aclose()


async def test_the_key_kept_in_the_keyring_is_the_one_the_provider_sends(tmp_path: Path) -> None:
    store = KeyStore(tmp_path, MemoryKeyring())
    with FakeOpenAIServer(reply="Hi.") as server:
        server.api_key = SECRET  # anything else is answered 401
        main = ProviderSettings("main", server.base_url, server.model, id="m")
        save_providers(tmp_path, [main], {"m": SECRET}, keys=store)
        provider = load_provider(tmp_path, keys=store)
        try:
            chunks = [c async for c in provider.stream([ChatMessage("user", "hello")])]
            assert "".join(c.text for c in chunks) == "Hi."
        finally:
            await provider.aclose()


def test_without_keyring_keys_go_to_a_private_file(tmp_path: Path) -> None:
    store = KeyStore(tmp_path, None)
    save_providers(tmp_path, settings(), {"m": SECRET, "l": "k2"}, keys=store)
    keys_file = tmp_path / "provider-keys.json"
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600
    assert SECRET not in (tmp_path / "providers.json").read_text()
    assert store.get("provider-id:m") == SECRET
    # Removing a provider forgets its key; None forgets a key explicitly.
    save_providers(tmp_path, settings()[:1], {"m": None}, keys=store)
    assert json.loads(keys_file.read_text()) == {}


def test_bare_list_from_version_0_is_read(tmp_path: Path) -> None:
    entry = {"name": "old", "base_url": "http://h/v1", "model": "m"}
    (tmp_path / "providers.json").write_text(json.dumps([entry, {"name": 3}]))
    assert read_settings(tmp_path) == [
        ProviderSettings("old", "http://h/v1", "m", "provider:old", id="legacy-0")
    ]


def test_a_renamed_provider_keeps_its_key(tmp_path: Path) -> None:
    store = KeyStore(tmp_path, None)
    saved = save_providers(tmp_path, settings(), {"m": SECRET}, keys=store)
    renamed = [replace(saved[0], name="primary"), saved[1]]
    save_providers(tmp_path, renamed, keys=store)
    main = read_settings(tmp_path)[0]
    assert (main.name, store.get(main.key_ref)) == ("primary", SECRET)


def test_version_1_files_keep_their_name_derived_keys_and_get_ids(tmp_path: Path) -> None:
    """Migration: a file from before ids, two providers of one name sharing one key."""
    store = KeyStore(tmp_path, None)
    store.set("provider:main", SECRET)
    entry = {"name": "main", "base_url": "http://h/v1", "model": "m", "key_ref": "provider:main"}
    (tmp_path / "providers.json").write_text(json.dumps({"version": 1, "providers": [entry] * 2}))
    first, second = read_settings(tmp_path)
    renamed = [replace(first, name="renamed"), second]
    save_providers(tmp_path, renamed, {second.id: "sk-2"}, keys=store)
    a, b = read_settings(tmp_path)
    assert a.id and b.id and a.id != b.id and a.key_ref != b.key_ref
    assert (a.name, store.get(a.key_ref)) == ("renamed", SECRET), "the old key is kept"
    assert store.get(b.key_ref) == "sk-2", "a new key for the twin does not overwrite the other"


def test_the_offline_model_gateway_does_not_load_the_http_client(tmp_path: Path) -> None:
    # httpx stays out of a gateway with no provider configured: ~2 MB the user pays for.
    import subprocess
    import sys

    probe = (
        "import sys, pathlib\n"
        "from desktop.gateway.providers.registry import load_provider\n"
        f"load_provider(pathlib.Path({str(tmp_path)!r}))\n"
        "print('httpx' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
