"""Builds the gateway's provider from saved settings: a fallback chain, or the offline model."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from desktop.common.clock import Clock

from .base import ChatMessage, Chunk, Provider, Usage
from .config import (
    CONFIG_FILE,
    KeyStore,
    ProviderSettings,
    new_provider_id,
    read_settings,
    write_settings,
)
from .fallback import FallbackChain
from .offline import OfflineProvider


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
    # httpx (about 2 MB resident in the gateway) only when a provider is configured.
    from .openai import OpenAICompatibleProvider

    store = keys or KeyStore.default(config_dir)
    providers: list[Provider] = [
        OpenAICompatibleProvider(
            s.name, s.base_url, store.get(s.key_ref), s.model, idle_timeout=s.idle_timeout
        )
        for s in settings
    ]
    return FallbackChain(providers, clock=clock)


log = logging.getLogger(__name__)


class ConfigWatchingProvider:
    """The provider built from `providers.json`, rebuilt when that file changes.

    Settings saved in the app take effect from the next turn without restarting the gateway;
    a turn already streaming finishes on the provider it started with.
    """

    def __init__(self, config_dir: Path, *, keys: KeyStore | None = None) -> None:
        self._dir = config_dir
        self._keys = keys
        self._stamp = self._read_stamp()
        self._inner = load_provider(config_dir, keys=keys)
        self._retired: list[Provider] = []
        self._streams = 0  # turns in flight; retired providers close once none are left
        self.name = self._inner.name

    @property
    def last_usage(self) -> Usage | None:
        return self._inner.last_usage

    def _read_stamp(self) -> tuple[int, int] | None:
        try:
            st = (self._dir / CONFIG_FILE).stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def _refresh(self) -> None:
        stamp = self._read_stamp()
        if stamp == self._stamp:
            return
        self._stamp = stamp
        self._retired.append(self._inner)
        self._inner = load_provider(self._dir, keys=self._keys)
        self.name = self._inner.name
        log.info("provider settings changed: now using %s", self._inner.name)

    async def stream(self, messages: list[ChatMessage]) -> AsyncIterator[Chunk]:
        self._refresh()
        self._streams += 1
        try:
            async for chunk in self._inner.stream(messages):
                yield chunk
        finally:
            self._streams -= 1
            if not self._streams:
                await self._close_retired()

    async def _close_retired(self) -> None:
        retired, self._retired = self._retired, []
        for provider in retired:
            await provider.aclose()

    async def aclose(self) -> None:
        await self._close_retired()
        await self._inner.aclose()


def save_providers(
    config_dir: Path,
    providers: Sequence[ProviderSettings],
    api_keys: Mapping[str, str | None] | None = None,
    *,
    keys: KeyStore | None = None,
) -> list[ProviderSettings]:
    """Saves settings, primary first; returns them as written (every one with an id and key_ref).

    `api_keys` maps a provider *id* to its new key (stored in the keyring or key file, never in
    the JSON) or to None to forget it; providers not in it keep their stored key, whatever they
    are now called. Keys of providers that were removed are forgotten too.
    """
    store = keys or KeyStore.default(config_dir)
    old_refs = {s.key_ref for s in read_settings(config_dir)}
    saved: list[ProviderSettings] = []
    taken: set[str] = set()
    for p in providers:
        pid = p.id or new_provider_id()
        ref = p.key_ref or ProviderSettings.key_ref_for(pid)
        if ref in taken:
            # Two providers of one name shared a name-derived key before version 2: give this one
            # its own reference, starting from the key they shared, so neither loses it.
            shared, ref = ref, ProviderSettings.key_ref_for(pid)
            secret = store.get(shared)
            if secret:
                store.set(ref, secret)
        taken.add(ref)
        saved.append(replace(p, id=pid, key_ref=ref))
    for settings in saved:
        if api_keys is None or settings.id not in api_keys:
            continue
        new_key = api_keys[settings.id]
        if new_key:
            store.set(settings.key_ref, new_key)
        else:
            store.delete(settings.key_ref)
    write_settings(config_dir, saved)
    for ref in old_refs - taken:
        store.delete(ref)
    return saved
