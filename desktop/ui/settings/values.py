"""Plain settings values the settings dialog edits; persistence belongs to the caller."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

from desktop.core.errors import InsecureTransportError
from desktop.core.link.launcher import LauncherStartError, find_hermes
from desktop.core.link.profiles import ProfileError, ProfileKind, validate_url


@dataclass(slots=True)
class ProfileSettings:
    """One connection profile."""

    id: str
    name: str
    kind: ProfileKind = ProfileKind.EMBEDDED
    url: str = ""
    token: str = ""  # stored in the keyring by the caller; never logged
    ca_file: str = ""
    allow_insecure_ws: bool = False
    hermes_home: str = ""  # local Hermes: "" is the user's own ($HERMES_HOME or ~/.hermes)
    hermes_path: str = ""  # local Hermes: "" is the `hermes` on PATH


@dataclass(slots=True)
class ProviderSettings:
    """A model provider of the embedded gateway; list order is fallback order."""

    name: str
    base_url: str
    model: str
    api_key: str = ""  # stored in the keyring by the caller; never logged
    id: str = ""  # stable across renames: the key follows it; "" for one not saved yet
    models: tuple[str, ...] = ()  # what "Load models" listed: the chat header offers them


@dataclass(slots=True)
class AppSettings:
    """Everything the settings dialog edits."""

    version: int = 1
    profiles: list[ProfileSettings] = field(default_factory=list)
    # Saved profiles this version cannot use, described ("Work: unknown profile kind 'x'");
    # shown, never edited, kept in the file as they are.
    unreadable_profiles: list[str] = field(default_factory=list)
    providers: list[ProviderSettings] = field(default_factory=list)
    theme: str = "system"  # light | dark | system
    send_key: str = "enter"  # enter | ctrl_enter
    notifications: bool = True
    close_to_tray: bool = False
    keep_awake: bool = True  # hold a sleep inhibitor while a reply runs (capped at 2 h)
    reading_width: int = 0  # replies wrap at about this many characters, centred; 0: full width


class CheckError(Exception):
    """A settings check failed; the message names the cause for the user."""


class SettingsChecks(Protocol):
    """What the dialog's Load models and Test buttons run (real requests, in the caller's loop)."""

    async def list_models(self, provider: ProviderSettings) -> list[str]: ...

    async def test_provider(self, provider: ProviderSettings) -> str: ...

    async def test_profile(self, profile: ProfileSettings) -> str: ...


@dataclass(frozen=True, slots=True)
class Problem:
    """Why settings cannot be saved: which tab, row and field, and what to do."""

    section: str  # "profiles" | "providers"
    row: int
    field: str  # the attribute of the row's settings, e.g. "base_url"
    message: str


def problems(values: AppSettings) -> list[Problem]:
    """Everything that would make saved settings not work, in the order the dialog shows it."""
    out: list[Problem] = []
    names: set[str] = set()
    for row, p in enumerate(values.profiles):
        if not p.name.strip():
            out.append(Problem("profiles", row, "name", "a profile needs a name"))
        elif p.name.strip().lower() in names:
            out.append(Problem("profiles", row, "name", f"two profiles are called {p.name!r}"))
        names.add(p.name.strip().lower())
        if p.kind is ProfileKind.REMOTE:
            try:
                validate_url(p.url.strip(), allow_insecure=p.allow_insecure_ws)
            except (ProfileError, InsecureTransportError) as exc:
                out.append(Problem("profiles", row, "url", str(exc)))
        if p.kind is ProfileKind.LOCAL_HERMES and p.hermes_path.strip():
            try:
                find_hermes(p.hermes_path.strip())
            except LauncherStartError as exc:
                out.append(Problem("profiles", row, "hermes_path", exc.reason))
    names = set()
    for row, v in enumerate(values.providers):
        name = v.name.strip().lower()
        if not name:
            out.append(Problem("providers", row, "name", "a provider needs a name"))
        elif name in names:
            message = f"two providers are called {v.name!r}: give each its own name"
            out.append(Problem("providers", row, "name", message))
        names.add(name)
        parts = urlsplit(v.base_url.strip())
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            message = "the base URL must be http(s)://host/…, e.g. https://api.openai.com/v1"
            out.append(Problem("providers", row, "base_url", message))
        if not v.model.strip():
            message = "choose a model (Load models lists what the provider offers)"
            out.append(Problem("providers", row, "model", message))
    return out
