"""Text at the gateway boundary: lone surrogates (not encodable as UTF-8) found or replaced."""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def _encodable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def invalid_text_path(value: Any, path: str = "params") -> str | None:
    """Where in a decoded JSON value a string holds a lone surrogate (e.g. `params.title`)."""
    if isinstance(value, str):
        return None if _encodable(value) else path
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and not _encodable(key):
                return f"{path} (a key)"
            found = invalid_text_path(item, f"{path}.{key}")
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = invalid_text_path(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def scrub(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it can always be sent and stored."""
    return text if _encodable(text) else _SURROGATE.sub(REPLACEMENT, text)
