"""Giving freed heap memory back to the system, where the C library keeps it otherwise."""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from functools import cache


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None (another platform or C library)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim  # the C library this process already runs on
    except (OSError, AttributeError):
        return None  # musl and others: no such call
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_free_memory() -> bool:
    """Hand the heap pages freed since (e.g. a long chat's rows let go) back to the system.

    glibc keeps freed memory for reuse: after a burst of short-lived allocations (pages of
    history decoded, laid out and let go) the process stays at its high-water mark. False
    where the C library has no such call.
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
