"""Provider settings in `providers.json` (versioned) and their API keys in the OS keyring."""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from desktop.common.atomic import keep_aside, write_atomic

log = logging.getLogger(__name__)

KEYRING_SERVICE = "hermes-qt"
CONFIG_FILE = "providers.json"
KEYS_FILE = "provider-keys.json"  # fallback when no keyring is usable; mode 0600
VERSION = 2  # 2: every provider has a stable `id`; its key follows the id, not the name


def new_provider_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """One configured provider. The key itself is never here, only `key_ref` naming it.

    `id` is stable for the provider's life: renaming a provider keeps its id and so its key.
    """

    name: str
    base_url: str
    model: str
    key_ref: str = ""
    idle_timeout: float = 60.0
    id: str = ""
    # What the provider listed (GET /models) when last asked: the chat header's model switch
    # offers these; `model` is the default a new chat uses.
    models: tuple[str, ...] = ()

    @staticmethod
    def default_key_ref(name: str) -> str:
        """The reference versions 0 and 1 derived from the name; still read, never created."""
        return f"provider:{name}"

    @staticmethod
    def key_ref_for(provider_id: str) -> str:
        return f"provider-id:{provider_id}"


def read_settings(config_dir: Path) -> list[ProviderSettings]:
    """The configured providers, primary first; [] when the file is missing or unreadable."""
    path = config_dir / CONFIG_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable %s: %s", path, exc)
        return []
    # Version 0 was a bare list; version 1 wraps it with a version number.
    if isinstance(raw, list):
        entries = raw
    elif isinstance(raw, dict):
        entries = raw.get("providers", [])
    else:
        log.warning("ignoring %s: it holds %s, not providers", path, type(raw).__name__)
        return []
    out: list[ProviderSettings] = []
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        settings = _parse(entry, index)
        if settings is not None:
            out.append(settings)
    return out


def write_settings(config_dir: Path, providers: Sequence[ProviderSettings]) -> None:
    """Write the providers; entries this version could not read are written back as they were
    (after the others), and a file that was not readable at all is first copied aside."""
    path = config_dir / CONFIG_FILE
    kept = _unreadable_entries(path)
    if kept is None:
        keep_aside(path)
        kept = []
    data = {"version": VERSION, "providers": [asdict(p) for p in providers] + kept}
    write_atomic(path, json.dumps(data, indent=2) + "\n", mode=0o644)


def _unreadable_entries(path: Path) -> list[Any] | None:
    """The entries of the file at `path` that do not parse; None if the file itself is not
    readable as providers (a missing file has none)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        return None
    if isinstance(raw, dict):
        raw = raw.get("providers", [])
    if not isinstance(raw, list):
        return None
    return [entry for i, entry in enumerate(raw) if _parse(entry, i) is None]


def _parse(entry: Any, index: int) -> ProviderSettings | None:
    if not isinstance(entry, dict):
        return None
    name, base_url, model = entry.get("name"), entry.get("base_url"), entry.get("model")
    if not (isinstance(name, str) and isinstance(base_url, str) and isinstance(model, str)):
        return None
    key_ref = entry.get("key_ref")
    idle = entry.get("idle_timeout")
    pid = entry.get("id")
    listed = entry.get("models")
    return ProviderSettings(
        name=name,
        base_url=base_url,
        model=model,
        # Entries written before version 2 keep the name-derived reference their key is under.
        key_ref=key_ref if isinstance(key_ref, str) else ProviderSettings.default_key_ref(name),
        idle_timeout=float(idle) if isinstance(idle, int | float) and idle > 0 else 60.0,
        # Before version 2 there was no id: the position is stable until the next save writes one.
        id=pid if isinstance(pid, str) and pid else f"legacy-{index}",
        models=tuple(m for m in listed if isinstance(m, str) and m)
        if isinstance(listed, list)
        else (),
    )


class KeyringBackend(Protocol):
    def get_password(self, service: str, username: str) -> str | None: ...

    def set_password(self, service: str, username: str, password: str) -> None: ...

    def delete_password(self, service: str, username: str) -> None: ...


def system_keyring() -> KeyringBackend | None:
    """The OS keyring when a real one is available, else None (null/fail backends)."""
    try:
        import keyring

        backend = keyring.get_keyring()
        priority = float(getattr(backend, "priority", 0))
    except Exception:  # a broken keyring install must not stop the app
        return None
    return backend if priority > 0 else None


class KeyStore:
    """API keys by `key_ref`: in the keyring when usable, else in a 0600 file by the config."""

    def __init__(self, config_dir: Path, backend: KeyringBackend | None = None) -> None:
        self.config_dir = config_dir
        self.backend = backend

    @classmethod
    def default(cls, config_dir: Path) -> KeyStore:
        return cls(config_dir, system_keyring())

    def get(self, key_ref: str) -> str:
        if not key_ref:
            return ""
        if self.backend is not None:
            with contextlib.suppress(Exception):
                value = self.backend.get_password(KEYRING_SERVICE, key_ref)
                if value is not None:
                    return value
        return self._read_file().get(key_ref, "")

    def set(self, key_ref: str, secret: str) -> None:
        if self.backend is not None:
            try:
                self.backend.set_password(KEYRING_SERVICE, key_ref, secret)
            except Exception as exc:
                log.warning(
                    "keyring refused the key for %s (%s); using the key file",
                    key_ref,
                    type(exc).__name__,
                )
            else:
                self._drop_from_file(key_ref)
                return
        keys = self._read_file()
        keys[key_ref] = secret
        self._write_file(keys)

    def delete(self, key_ref: str) -> None:
        if self.backend is not None:
            with contextlib.suppress(Exception):
                self.backend.delete_password(KEYRING_SERVICE, key_ref)
        self._drop_from_file(key_ref)

    def _drop_from_file(self, key_ref: str) -> None:
        keys = self._read_file()
        if keys.pop(key_ref, None) is not None:
            self._write_file(keys)

    def _read_file(self) -> dict[str, str]:
        try:
            raw = json.loads((self.config_dir / KEYS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(raw, dict):
            return {}
        return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)}

    def _write_file(self, keys: dict[str, str]) -> None:
        write_atomic(self.config_dir / KEYS_FILE, json.dumps(keys) + "\n", mode=0o600)
