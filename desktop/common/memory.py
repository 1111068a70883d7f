"""Giving the system back the heap a burst of short-lived objects left free.

Decoding a list of thousands of chats allocates tens of thousands of dicts and strings at
once; freed, glibc keeps the pages for reuse and the process stays that much bigger for good.
`malloc_trim(0)` returns them (10,000 chats listed: the app's growth 15 -> 12 MB). Elsewhere
(no glibc) nothing is done. Used by the app (a list merged, a chat's rows let go) and by the
embedded gateway (a big reply sent).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from collections.abc import Callable

# A list of at least this many rows is a burst worth trimming after (a few ms each time).
BIG_LIST = 2000

_trim: Callable[[int], int] | None = None
_looked = False


def _malloc_trim() -> Callable[[int], int] | None:
    global _trim, _looked
    if not _looked:
        _looked = True
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                _trim = libc.malloc_trim
            except (OSError, AttributeError):  # musl and others have no malloc_trim
                _trim = None
    return _trim


def release_freed_memory(*, collect: bool = False) -> bool:
    """Return freed heap pages to the system; whether this platform could.

    `collect`: first a full garbage collection, for a burst whose objects a reference cycle
    may still hold (the embedded gateway's big replies: 4 of its 5 MB came back only so).
    Not for the app's UI thread, whose heap takes far longer to walk.
    """
    if collect:
        gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
