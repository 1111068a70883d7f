"""Standard-library modules a dependency imports at start-up but seldom uses, loaded on first use.

websockets imports `importlib.metadata` (and with it `email`, `csv`, `zipfile`: 46 modules)
for a version string it computes only in a development checkout, and `urllib.request` (with
`http.client`) for the system proxy, which it asks for only for a gateway off this machine.
`logging.handlers` imports `pickle` for a socket handler neither process uses. Loaded, they
cost the app 2.0 MB and its gateway 1.4 MB, and the gateway 14 ms before it is ready (measured
with five 2,000-message chats open; the gateway's ready line, median of 12 starts).

`defer_unused_modules()` puts a stand-in for each into `sys.modules` before anything imports
them: the import statement finds the stand-in and binds it; the first attribute read from it
imports the real module, whose names the stand-in then holds too. So a program that uses one
after all (a proxy looked up for a remote gateway) gets the real thing, a little later.
`importlib.util.LazyLoader` cannot do this on Python 3.11: the import statement reads the
module's `__spec__`, and a lazy module loads itself on any attribute read.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

UNUSED_AT_START = ("importlib.metadata", "urllib.request", "pickle")

_swap = threading.Lock()


class _Deferred(types.ModuleType):
    """Stands in for a module until one of its attributes is read."""

    def __getattr__(self, name: str) -> Any:
        try:
            real = _load(self)
        except ImportError as exc:  # as for any missing attribute (`hasattr` asks so)
            raise AttributeError(name) from exc
        return getattr(real, name)


def _load(stub: _Deferred) -> types.ModuleType:
    module_name = stub.__name__
    # Two threads reading the stand-in at once: one takes it out, the other then finds the
    # real module (or waits on its import) and never imports a second copy. The lock is held
    # for the check alone, never across an import.
    with _swap:
        if sys.modules.get(module_name) is stub:
            del sys.modules[module_name]
    real = importlib.import_module(module_name)
    # Whoever bound the stand-in (`import urllib.request`) reads the real names from now on.
    stub.__dict__.update(real.__dict__)
    return real


def defer(module_name: str) -> bool:
    """Put a stand-in for `module_name` into `sys.modules`; False if it is imported already or
    cannot be found (then nothing changes)."""
    if module_name in sys.modules:
        return False
    parent_name, _, child = module_name.rpartition(".")
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    stub = _Deferred(module_name)
    # What the import statement reads, and what code scanning `sys.modules` for files reads
    # (inspect.getmodule): everything else comes from the real module.
    stub.__spec__ = spec
    stub.__file__ = spec.origin
    stub.__loader__ = spec.loader
    sys.modules[module_name] = stub
    if parent_name:
        setattr(sys.modules[parent_name], child, stub)
    return True


def defer_unused_modules() -> None:
    """Stand-ins for `UNUSED_AT_START`; call it first thing, before websockets is imported."""
    for module_name in UNUSED_AT_START:
        defer(module_name)
