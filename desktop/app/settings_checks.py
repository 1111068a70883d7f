"""What the settings dialog's Load models / Test buttons run, with the secrets already saved.

Composition glue like `desktop.app.preferences`: the dialog hands over what the user typed; a key
or token left empty ("saved; type to replace") is taken from where it is stored.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from desktop.app.preferences import Preferences
from desktop.core.link.profiles import ProfileKind
from desktop.ui.settings.values import CheckError, ProfileSettings, ProviderSettings


class SettingsChecks:
    """Implements `desktop.ui.settings.values.SettingsChecks` against the saved secrets."""

    def __init__(self, preferences: Preferences, config_dir: Path, log_dir: Path) -> None:
        self._prefs = preferences
        self._config = config_dir
        self._logs = log_dir

    def _api_key(self, provider: ProviderSettings) -> str:
        if provider.api_key or not provider.id:
            return provider.api_key
        from desktop.gateway.providers.config import KeyStore, read_settings

        stored = {s.id: s for s in read_settings(self._config)}.get(provider.id)
        return KeyStore.default(self._config).get(stored.key_ref) if stored else ""

    async def list_models(self, provider: ProviderSettings) -> list[str]:
        from desktop.gateway.providers.probe import ProbeError, list_models

        try:
            return await list_models(provider.base_url, self._api_key(provider))
        except ProbeError as exc:
            raise CheckError(str(exc)) from exc

    async def test_provider(self, provider: ProviderSettings) -> str:
        from desktop.gateway.providers.probe import ProbeError, try_chat

        try:
            reply = await try_chat(provider.base_url, self._api_key(provider), provider.model)
        except ProbeError as exc:
            raise CheckError(str(exc)) from exc
        said = reply.text if len(reply.text) <= 60 else reply.text[:59] + "…"
        return f"{reply.model} answered in {reply.seconds:.1f} s: “{said}”"

    async def test_profile(self, profile: ProfileSettings) -> str:
        from desktop.core.link.check import GatewayCheckError, check_gateway
        from desktop.core.link.launcher import HermesServeLauncher, hermes_home_for

        launcher = None
        token = profile.token
        if profile.kind is ProfileKind.LOCAL_HERMES:
            launcher = HermesServeLauncher(
                hermes_home_for(profile.hermes_home),
                hermes=profile.hermes_path,
                log_path=self._logs / f"hermes-serve-test-{profile.id}.log",
            )
        elif not token:
            saved = {p.id: p for p in self._prefs.profiles()}.get(profile.id)
            token = (self._prefs.token(saved) if saved else None) or ""
        try:
            return await check_gateway(
                profile.url,
                token,
                allow_insecure=profile.allow_insecure_ws,
                ssl=_ssl_context(profile.ca_file) if profile.url.startswith("wss://") else None,
                launcher=launcher,
            )
        except GatewayCheckError as exc:
            raise CheckError(str(exc)) from exc


def _ssl_context(ca_file: str) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=ca_file or None)
