"""Gateway tokens: checking a request's credentials, and loading or minting the token file."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

TOKEN_ENV = "HERMES_QT_GATEWAY_TOKEN"


def request_token(path: str, authorization: str | None) -> str | None:
    """The token a client presented, from `Authorization: Bearer` or the `token` query."""
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    values = parse_qs(urlsplit(path).query).get("token")
    return values[0] if values else None


def token_matches(presented: str | None, expected: str) -> bool:
    if presented is None:
        return False
    return secrets.compare_digest(presented.encode(), expected.encode())


def load_or_create_token(token_file: Path) -> tuple[str, bool]:
    """Read the token file, or write a fresh token to it (mode 0600); True when created."""
    if token_file.exists():
        token = token_file.read_text(encoding="utf-8").strip()
        if token:
            return token, False
    token_file.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    os.chmod(token_file, 0o600)
    return token, True
