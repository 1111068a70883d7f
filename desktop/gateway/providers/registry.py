"""Builds the gateway's provider from saved settings: a fallback chain, or the offline model."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from desktop.common.clock import Clock

from .base import ChatMessage, Chunk, ModelPick, Provider, Usage
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
    a turn already streaming finishes on the provider it started with. It is also the model
    switch (`ModelSwitch`): a session may pick any model a configured provider offers; the
    primary provider's own model goes through the fallback chain, another pick straight to
    its provider (the user asked for exactly that model).
    """

    def __init__(self, config_dir: Path, *, keys: KeyStore | None = None) -> None:
        self._dir = config_dir
        self._keys = keys
        self._stamp = self._read_stamp()
        self._settings = read_settings(config_dir)
        self._inner = load_provider(config_dir, keys=keys)
        self._picked: dict[ModelPick, Provider] = {}
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
        self._retired.extend(self._picked.values())
        self._picked.clear()
        self._settings = read_settings(self._dir)
        self._inner = load_provider(self._dir, keys=self._keys)
        self.name = self._inner.name
        log.info("provider settings changed: now using %s", self._inner.name)

    async def stream(self, messages: list[ChatMessage]) -> AsyncIterator[Chunk]:
        self._refresh()
        async for chunk in self._counted(self._inner, messages):
            yield chunk

    async def _counted(
        self, provider: Provider, messages: list[ChatMessage]
    ) -> AsyncIterator[Chunk]:
        self._streams += 1
        try:
            async for chunk in provider.stream(messages):
                yield chunk
        finally:
            self._streams -= 1
            if not self._streams:
                await self._close_retired()

    # the model switch

    def _effective(self, pick: ModelPick | None) -> tuple[ProviderSettings, str] | None:
        """The provider settings and model a pick comes to now; the primary's model when the
        pick is gone (its provider removed) or none was made; None with no provider at all."""
        self._refresh()
        if not self._settings:
            return None
        if pick is not None:
            for settings in self._settings:
                if settings.id == pick[0]:
                    return settings, pick[1]
        return self._settings[0], self._settings[0].model

    def describe(self, pick: ModelPick | None) -> tuple[str, str]:
        effective = self._effective(pick)
        if effective is None:
            # Not "offline": the header shows it beside the link state ("Online").
            return "built-in model", "no provider set"
        settings, model = effective
        return model, settings.name

    def catalog(self, pick: ModelPick | None) -> dict[str, Any]:
        effective = self._effective(pick)
        providers = [
            {
                "slug": s.id,
                "name": s.name,
                "models": list(dict.fromkeys([s.model, *s.models])),
                "authenticated": True,
            }
            for s in self._settings
        ]
        if effective is None:
            return {"model": "", "provider": "", "providers": []}
        return {"model": effective[1], "provider": effective[0].id, "providers": providers}

    def resolve(self, value: str) -> ModelPick:
        model, _, rest = value.strip().partition("--provider")
        model, slug = model.strip(), rest.strip()
        self._refresh()
        if not model:
            raise ValueError("name a model")
        if not self._settings:
            raise ValueError("no model provider is set up: add one in Settings first")
        if slug:
            for s in self._settings:
                if slug in (s.id, s.name):
                    return s.id, model
            raise ValueError(f"no provider {slug!r} is set up")
        for s in self._settings:
            if model == s.model or model in s.models:
                return s.id, model
        return self._settings[0].id, model

    def provider_for(self, pick: ModelPick | None) -> Provider:
        effective = self._effective(pick)
        if effective is None:
            return self
        settings, model = effective
        primary = self._settings[0]
        if settings.id == primary.id and model == primary.model:
            return self
        key = (settings.id, model)
        provider = self._picked.get(key)
        if provider is None:
            from .openai import OpenAICompatibleProvider

            store = self._keys or KeyStore.default(self._dir)
            provider = self._picked[key] = OpenAICompatibleProvider(
                settings.name,
                settings.base_url,
                store.get(settings.key_ref),
                model,
                idle_timeout=settings.idle_timeout,
            )
        return _Picked(self, provider)

    async def _close_retired(self) -> None:
        retired, self._retired = self._retired, []
        for provider in retired:
            await provider.aclose()

    async def aclose(self) -> None:
        await self._close_retired()
        for provider in self._picked.values():
            await provider.aclose()
        self._picked.clear()
        await self._inner.aclose()


class _Picked:
    """One session's picked model, streamed through its owner (which closes it when the
    settings change, once no turn still streams from it)."""

    def __init__(self, owner: ConfigWatchingProvider, provider: Provider) -> None:
        self._owner = owner
        self._provider = provider
        self.name = provider.name

    @property
    def last_usage(self) -> Usage | None:
        return self._provider.last_usage

    def stream(self, messages: list[ChatMessage]) -> AsyncIterator[Chunk]:
        return self._owner._counted(self._provider, messages)

    async def aclose(self) -> None:
        """Owned by the switch: nothing to close here."""


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
