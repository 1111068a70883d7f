"""Connection profiles, their URL rules, and where their tokens are kept (never in plain JSON)."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from desktop.common.atomic import write_atomic
from desktop.common.hosts import is_loopback_host
from desktop.core.errors import InsecureTransportError


class ProfileKind(Enum):
    EMBEDDED = "embedded"  # the app starts its own gateway as a child process
    LOCAL_HERMES = "local_hermes"  # the app starts `hermes serve` on loopback
    REMOTE = "remote"  # a gateway somebody else runs, reached by URL


class ProfileError(ValueError):
    """A profile's settings cannot work (bad URL, unknown kind)."""


@dataclass(frozen=True, slots=True)
class TlsOptions:
    verify: bool = True
    ca_file: str | None = None


@dataclass(frozen=True, slots=True)
class Profile:
    """One gateway the user connects to. The token itself lives in a TokenStore under token_ref."""

    id: str
    name: str
    kind: ProfileKind
    url: str = ""
    token_ref: str | None = None
    allow_insecure: bool = False
    tls: TlsOptions = TlsOptions()
    # Local Hermes only: "" means the user's own home ($HERMES_HOME or ~/.hermes) and the
    # `hermes` on PATH.
    hermes_home: str = ""
    hermes_path: str = ""

    def validate(self) -> None:
        """Raise ProfileError / InsecureTransportError if this profile must not be used."""
        if not self.id:
            raise ProfileError("profile needs an id")
        if self.kind is ProfileKind.REMOTE or self.url:
            validate_url(self.url, allow_insecure=self.allow_insecure)

    def to_json(self) -> dict[str, Any]:
        """Settings as plain JSON: never the token, only its reference."""
        return {
            "id": self.id,
            "name": self.name,
            "kind": self.kind.value,
            "url": self.url,
            "token_ref": self.token_ref,
            "allow_insecure": self.allow_insecure,
            "tls": {"verify": self.tls.verify, "ca_file": self.tls.ca_file},
            "hermes_home": self.hermes_home,
            "hermes_path": self.hermes_path,
        }

    @classmethod
    def from_json(cls, data: Any) -> Profile:
        """A profile from its saved JSON; ProfileError naming what is wrong with it."""
        if not isinstance(data, dict):
            raise ProfileError(f"the entry is {_json_kind(data)}, not a profile")
        pid = data.get("id")
        if not isinstance(pid, str) or not pid:
            raise ProfileError("a profile has no id")
        try:
            kind = ProfileKind(data.get("kind", "remote"))
        except ValueError as exc:
            raise ProfileError(f"unknown profile kind {data.get('kind')!r}") from exc
        tls = data.get("tls") or {}
        if not isinstance(tls, dict):
            raise ProfileError(f"its TLS settings are {_json_kind(tls)}, not a set of options")
        token_ref = data.get("token_ref")
        ca_file = tls.get("ca_file")
        for name, value in (("token_ref", token_ref), ("tls.ca_file", ca_file)):
            if value is not None and not isinstance(value, str):
                raise ProfileError(f"its {name} is {_json_kind(value)}, not text")
        return cls(
            id=pid,
            name=str(data.get("name", pid)),
            kind=kind,
            url=str(data.get("url", "")),
            token_ref=token_ref,
            allow_insecure=bool(data.get("allow_insecure", False)),
            tls=TlsOptions(verify=bool(tls.get("verify", True)), ca_file=ca_file),
            hermes_home=str(data.get("hermes_home") or ""),
            hermes_path=str(data.get("hermes_path") or ""),
        )


@dataclass(frozen=True, slots=True)
class UnreadableProfile:
    """A saved profile this version cannot use (a newer kind, a typo): kept as it was written,
    shown with the reason, written back unchanged on every save."""

    raw: Any
    reason: str

    @property
    def label(self) -> str:
        name = self.raw.get("name") if isinstance(self.raw, dict) else None
        return f"{name if isinstance(name, str) and name else 'A profile'}: {self.reason}"


def _json_kind(value: Any) -> str:
    """What a JSON value is, in words (for reasons shown to the user)."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    return "empty" if value is None else "a set of options"


def validate_url(url: str, *, allow_insecure: bool = False) -> None:
    """A gateway URL must be ws(s)://host[:port]/...; plain ws only to loopback unless allowed."""
    parts = urlsplit(url)
    if parts.scheme not in {"ws", "wss"}:
        raise ProfileError(f"gateway URL must start with ws:// or wss:// (got {parts.scheme!r})")
    if not parts.hostname:
        raise ProfileError("gateway URL has no host")
    try:
        _ = parts.port
    except ValueError as exc:
        raise ProfileError("gateway URL has an invalid port") from exc
    if parts.scheme == "ws" and not is_loopback_host(parts.hostname) and not allow_insecure:
        raise InsecureTransportError(
            f"refusing plain ws:// to non-loopback host {parts.hostname}: use wss:// "
            "or allow insecure transport for this profile"
        )


class TokenStore(Protocol):
    """Secrets by reference; implementations never log values."""

    def get(self, ref: str) -> str | None: ...

    def set(self, ref: str, token: str) -> None: ...

    def delete(self, ref: str) -> None: ...


def new_token_ref(profile_id: str) -> str:
    return f"profile:{profile_id}:{secrets.token_hex(4)}"


class FileTokenStore:
    """Fallback when no OS keyring exists: one JSON file, mode 0600, replaced atomically."""

    def __init__(self, path: Path) -> None:
        self._path = Path(path)

    def get(self, ref: str) -> str | None:
        value = self._read().get(ref)
        return value if isinstance(value, str) else None

    def set(self, ref: str, token: str) -> None:
        data = self._read()
        data[ref] = token
        self._write(data)

    def delete(self, ref: str) -> None:
        data = self._read()
        if data.pop(ref, None) is not None:
            self._write(data)

    def _read(self) -> dict[str, Any]:
        try:
            raw = json.loads(self._path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return raw if isinstance(raw, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        write_atomic(self._path, json.dumps(data))


class KeyringTokenStore:
    """Tokens in the OS keyring; falls back to `fallback` when the keyring is unusable."""

    SERVICE = "hermes-qt"

    def __init__(self, fallback: TokenStore) -> None:
        self._fallback = fallback

    def _usable(self) -> Any:
        try:
            import keyring
            from keyring.backends import fail, null
        except Exception:
            return None
        backend = keyring.get_keyring()
        if isinstance(backend, (fail.Keyring, null.Keyring)):
            return None
        return keyring

    def get(self, ref: str) -> str | None:
        kr = self._usable()
        if kr is not None:
            try:
                value = kr.get_password(self.SERVICE, ref)
                if isinstance(value, str):
                    return value
            except Exception:
                pass
        return self._fallback.get(ref)

    def set(self, ref: str, token: str) -> None:
        kr = self._usable()
        if kr is not None:
            try:
                kr.set_password(self.SERVICE, ref, token)
                self._fallback.delete(ref)
                return
            except Exception:
                pass
        self._fallback.set(ref, token)

    def delete(self, ref: str) -> None:
        kr = self._usable()
        if kr is not None:
            try:
                kr.delete_password(self.SERVICE, ref)
            except Exception:
                pass
        self._fallback.delete(ref)
