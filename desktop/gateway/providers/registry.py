"""Builds the gateway's provider from saved settings: a fallback chain, or the offline model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from desktop.core.clock import Clock

from .base import Provider
from .config import CONFIG_FILE, KeyStore, ProviderSettings, read_settings, write_settings
from .fallback import FallbackChain
from .offline import OfflineProvider
from .openai import OpenAICompatibleProvider


def load_provider(
    config_dir: Path,
    *,
    keys: KeyStore | None = None,
    clock: Clock | None = None,
    offline_chunk_interval: float = 0.02,
) -> Provider:
    """The configured chain (first entry primary, the rest fallbacks), else the offline model."""
    settings = read_settings(config_dir)
    if not settings:
        return OfflineProvider(
            config_dir / CONFIG_FILE, chunk_interval=offline_chunk_interval, clock=clock
        )
    store = keys or KeyStore.default(config_dir)
    providers: list[Provider] = [
        OpenAICompatibleProvider(
            s.name, s.base_url, store.get(s.key_ref), s.model, idle_timeout=s.idle_timeout
        )
        for s in settings
    ]
    return FallbackChain(providers, clock=clock)


def save_providers(
    config_dir: Path,
    providers: Sequence[ProviderSettings],
    api_keys: Mapping[str, str | None] | None = None,
    *,
    keys: KeyStore | None = None,
) -> list[ProviderSettings]:
    """Saves settings, primary first; returns them as written (every one with a key_ref).

    `api_keys` maps a provider name to its new key (stored in the keyring or key file, never in
    the JSON) or to None to forget it; providers not in it keep their stored key. Keys of
    providers that were removed are forgotten too.
    """
    store = keys or KeyStore.default(config_dir)
    old_refs = {s.key_ref for s in read_settings(config_dir)}
    saved = [
        ProviderSettings(
            p.name,
            p.base_url,
            p.model,
            p.key_ref or ProviderSettings.default_key_ref(p.name),
            p.idle_timeout,
        )
        for p in providers
    ]
    for settings in saved:
        if api_keys is None or settings.name not in api_keys:
            continue
        secret = api_keys[settings.name]
        if secret:
            store.set(settings.key_ref, secret)
        else:
            store.delete(settings.key_ref)
    write_settings(config_dir, saved)
    for ref in old_refs - {s.key_ref for s in saved}:
        store.delete(ref)
    return saved
