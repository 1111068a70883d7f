"""Loads and saves what the settings dialog edits: profiles, providers and app preferences.

Composition glue between the dialog's plain values (desktop.ui.settings.values) and where each
piece lives: profiles in `profiles.json` with tokens in the token store, providers in the
embedded gateway's `providers.json` with keys in the keyring, preferences in a small JSON file.
Secrets never reach a JSON file or a log.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from desktop.common.atomic import keep_aside, write_atomic
from desktop.core.link.profiles import (
    Profile,
    ProfileError,
    ProfileKind,
    TlsOptions,
    TokenStore,
    UnreadableProfile,
    new_token_ref,
)
from desktop.ui.settings.values import AppSettings, ProfileSettings, ProviderSettings

log = logging.getLogger(__name__)

PROFILES_FILE = "profiles.json"
PREFERENCES_FILE = "preferences.json"
EMBEDDED_ID = "embedded"
_PREF_FIELDS = (
    "theme",
    "send_key",
    "notifications",
    "close_to_tray",
    "keep_awake",
    "reading_width",
)


def _write_json(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data, indent=2), mode=0o644)


class Preferences:
    """Reads the persisted settings into an AppSettings and writes an edited one back."""

    def __init__(self, config_dir: Path, tokens: TokenStore) -> None:
        self._dir = config_dir
        self._tokens = tokens

    # -- profiles -------------------------------------------------------------------------------

    def profiles(self) -> list[Profile]:
        """Saved profiles that can be used, always with the embedded one first."""
        profiles = self._read_profiles().usable
        if not any(p.kind is ProfileKind.EMBEDDED for p in profiles):
            profiles.insert(0, Profile(EMBEDDED_ID, "This computer", ProfileKind.EMBEDDED))
        return profiles

    def unreadable_profiles(self) -> list[UnreadableProfile]:
        """Saved profiles this version cannot use, each with its reason (kept in the file)."""
        return self._read_profiles().unreadable

    def _read_profiles(self) -> _SavedProfiles:
        """Every entry of profiles.json that can be read; the others set aside with a reason.

        One entry the app does not understand costs only that entry; a file that is not a
        JSON list at all is copied aside (`profiles.json.unreadable`) before the next save
        replaces it.
        """
        path = self._dir / PROFILES_FILE
        saved = _SavedProfiles()
        try:
            raw = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            return saved
        except (OSError, ValueError) as exc:
            saved.broken = f"{path} cannot be read ({exc})"
            log.warning("%s", saved.broken)
            return saved
        if not isinstance(raw, list):
            saved.broken = f"{path} holds {type(raw).__name__}, not a list of profiles"
            log.warning("%s", saved.broken)
            return saved
        for entry in raw:
            try:
                saved.usable.append(Profile.from_json(entry))
            except ProfileError as exc:
                log.warning("%s: a profile is set aside: %s", path, exc)
                saved.unreadable.append(UnreadableProfile(entry, str(exc)))
        return saved

    def token(self, profile: Profile) -> str | None:
        return self._tokens.get(profile.token_ref) if profile.token_ref else None

    # -- the dialog's values --------------------------------------------------------------------

    def load(self) -> AppSettings:
        # The provider modules pull in httpx: only the settings dialog needs them, not start-up.
        from desktop.gateway.providers import config as provider_config

        prefs = self._read_prefs()
        settings = AppSettings(
            profiles=[self._to_ui(p) for p in self.profiles()],
            unreadable_profiles=[u.label for u in self.unreadable_profiles()],
            providers=[
                ProviderSettings(p.name, p.base_url, p.model, id=p.id, models=p.models)
                for p in provider_config.read_settings(self._dir)
            ],
        )
        for name in _PREF_FIELDS:
            if name in prefs:
                setattr(settings, name, prefs[name])
        return settings

    def save(self, settings: AppSettings) -> list[str]:
        """Persist everything; returns what needs a restart to take effect (for a notice)."""
        from desktop.gateway.providers import config as provider_config
        from desktop.gateway.providers.registry import save_providers

        before = [p.to_json() for p in self.profiles()]
        profiles = [self._from_ui(p) for p in settings.profiles]
        saved = self._read_profiles()
        if saved.broken:
            keep_aside(self._dir / PROFILES_FILE)
        # What this version could not read is written back as it was, after the rest.
        _write_json(
            self._dir / PROFILES_FILE,
            [p.to_json() for p in profiles] + [u.raw for u in saved.unreadable],
        )
        # A provider's key and timeout follow its id, so a renamed provider keeps both.
        stored = {s.id: s for s in provider_config.read_settings(self._dir)}
        new_id = provider_config.new_provider_id
        ids = [p.id or new_id() for p in settings.providers]
        keys = {pid: p.api_key for pid, p in zip(ids, settings.providers, strict=True) if p.api_key}
        save_providers(
            self._dir,
            [
                dataclasses.replace(
                    stored.get(pid) or provider_config.ProviderSettings("", "", "", id=pid),
                    name=p.name,
                    base_url=p.base_url,
                    model=p.model,
                    models=p.models,
                )
                for pid, p in zip(ids, settings.providers, strict=True)
            ],
            keys,
        )
        _write_json(
            self._dir / PREFERENCES_FILE, {name: getattr(settings, name) for name in _PREF_FIELDS}
        )
        pending = []
        if [p.to_json() for p in self.profiles()] != before:
            pending.append("profiles")
        return pending

    def preference(self, name: str, default: Any) -> Any:
        return self._read_prefs().get(name, default)

    def _read_prefs(self) -> dict[str, Any]:
        try:
            data = json.loads((self._dir / PREFERENCES_FILE).read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        return (
            {k: v for k, v in data.items() if k in _PREF_FIELDS} if isinstance(data, dict) else {}
        )

    def _to_ui(self, profile: Profile) -> ProfileSettings:
        return ProfileSettings(
            id=profile.id,
            name=profile.name,
            kind=profile.kind,
            url=profile.url,
            token="",  # never shown back; an empty field keeps the stored token
            ca_file=profile.tls.ca_file or "",
            allow_insecure_ws=profile.allow_insecure,
            hermes_home=profile.hermes_home,
            hermes_path=profile.hermes_path,
        )

    def _from_ui(self, ui: ProfileSettings) -> Profile:
        existing = {p.id: p for p in self.profiles()}.get(ui.id)
        token_ref = existing.token_ref if existing else None
        if ui.token:
            token_ref = token_ref or new_token_ref(ui.id)
            self._tokens.set(token_ref, ui.token)
        profile = Profile(
            id=ui.id,
            name=ui.name,
            kind=ui.kind,
            url=ui.url,
            token_ref=token_ref,
            allow_insecure=ui.allow_insecure_ws,
            tls=TlsOptions(ca_file=ui.ca_file or None),
            hermes_home=ui.hermes_home.strip(),
            hermes_path=ui.hermes_path.strip(),
        )
        profile.validate()
        return profile


def settings_dict(settings: AppSettings) -> dict[str, Any]:
    """For logs and tests: the settings without any secret."""
    data = asdict(settings)
    for p in data["profiles"]:
        p["kind"] = p["kind"].value
        p["token"] = "***" if p["token"] else ""
    for p in data["providers"]:
        p["api_key"] = "***" if p["api_key"] else ""
    return data


@dataclass
class _SavedProfiles:
    usable: list[Profile] = field(default_factory=list)
    unreadable: list[UnreadableProfile] = field(default_factory=list)
    broken: str = ""  # why the whole file could not be read
