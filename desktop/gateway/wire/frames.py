"""Outgoing frame sizes: nothing the gateway sends may exceed the client's frame limit."""

from __future__ import annotations

from typing import Any

from desktop.common.codec import dumps
from desktop.common.limits import MAX_FRAME_BYTES

# Room for the JSON-RPC envelope around a result or an event payload.
ENVELOPE = 1024
# JSON text takes at most 6 bytes per character (`\u001f`); UTF-8 at most 4.
JSON_BYTES_PER_CHAR = 6
# The prompt cap of the seed contract; a smaller frame limit lowers it (see prompt_cap).
PROMPT_CHARS = 1_000_000


def utf8_size(text: str) -> int:
    """Bytes `text` takes on the wire (lone surrogates counted, not refused, here)."""
    return len(text.encode("utf-8", "surrogatepass"))


def fits(text: str, limit: int) -> bool:
    """True when `text` is at most `limit` UTF-8 bytes (cheap for the common small frame)."""
    return len(text) * 4 <= limit or utf8_size(text) <= limit


def prompt_cap(limit: int = MAX_FRAME_BYTES) -> int:
    """Longest prompt accepted: its history row must fit one frame even at 6 bytes a char."""
    # One envelope for the reply around the page, one for the row's other fields.
    return max(1, min(PROMPT_CHARS, (limit - 2 * ENVELOPE) // JSON_BYTES_PER_CHAR))


def truncate_strings(payload: dict[str, Any], budget: int) -> dict[str, Any]:
    """`payload` with its long strings cut so the whole fits `budget` bytes; marks `truncated`.

    The last resort for one value too large for any frame (a multi-megabyte reply text): the
    link stays up and the reader sees that something was cut, instead of a socket that dies
    on the same frame after every reconnect.
    """
    long_keys = [k for k, v in payload.items() if isinstance(v, str) and len(v) > 256]
    share = max(0, budget - ENVELOPE) // JSON_BYTES_PER_CHAR // max(1, len(long_keys))
    out = dict(payload)
    for key in long_keys:
        text = out[key]
        if len(text) > share:
            out[key] = text[:share]
            out[f"{key}_chars"] = len(text)
    out["truncated"] = True
    if not fits(dumps(out), budget):
        return {"truncated": True}  # the size is in nested values: send the marker alone
    return out


def page(rows: list[dict[str, Any]], start: int, stop: int, budget: int) -> list[dict[str, Any]]:
    """rows[start:stop], cut short where the encoded page would pass `budget` bytes.

    Never empty when start < stop: a single row too large for any frame is sent truncated.
    """
    out: list[dict[str, Any]] = []
    used = 0
    for row in rows[start:stop]:
        size = utf8_size(dumps(row)) + 1
        if used + size > budget:
            if not out:
                out.append(truncate_strings(row, budget))
            break
        out.append(row)
        used += size
    return out


def tail_start(rows: list[dict[str, Any]], budget: int) -> int:
    """Index of the first of the newest rows that together fit `budget` bytes."""
    used = 0
    for index in range(len(rows) - 1, -1, -1):
        used += utf8_size(dumps(rows[index])) + 1
        if used > budget:
            return min(index + 1, len(rows) - 1)
    return 0
