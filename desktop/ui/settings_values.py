"""Plain settings values the settings dialog edits; persistence belongs to the caller."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class ProfileKind(Enum):
    EMBEDDED = "embedded"  # the gateway this app starts itself
    LOCAL_HERMES = "local_hermes"  # a Hermes gateway on this machine
    REMOTE = "remote"  # a URL with a token


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


@dataclass(slots=True)
class ProviderSettings:
    """A model provider of the embedded gateway; list order is fallback order."""

    name: str
    base_url: str
    model: str
    api_key: str = ""  # stored in the keyring by the caller; never logged
    id: str = ""  # stable across renames: the key follows it; "" for one not saved yet


@dataclass(slots=True)
class AppSettings:
    """Everything the settings dialog edits."""

    version: int = 1
    profiles: list[ProfileSettings] = field(default_factory=list)
    providers: list[ProviderSettings] = field(default_factory=list)
    theme: str = "system"  # light | dark | system
    send_key: str = "enter"  # enter | ctrl_enter
    notifications: bool = True
    close_to_tray: bool = False
