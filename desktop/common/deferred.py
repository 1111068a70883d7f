"""Standard-library modules a dependency imports at start-up but seldom uses, loaded on first use.

websockets imports `importlib.metadata` (and with it `email`, `csv`, `zipfile`: 46 modules)
for a version string it computes only in a development checkout, and `urllib.request` (with
`http.client`) for the system proxy, which it asks for only for a gateway off this machine.
`logging.handlers` imports `pickle` for a socket handler neither process uses; `shutil` imports
`bz2` and `lzma` (with their C libraries) to know whether it could make such archives, which
neither process makes. Loaded, the first three cost the app 2.0 MB and its gateway 1.4 MB, and
the gateway 14 ms before it is ready (measured with five 2,000-message chats open; the
gateway's ready line, median of 12 starts); the last two ~0.2 MB each.

`defer_unused_modules()` puts a stand-in for each into `sys.modules` before anything imports
them: the import statement finds the stand-in and binds it; the first attribute read from it
imports the real module, whose names the stand-in then holds too. So a program that uses one
after all (a proxy looked up for a remote gateway) gets the real thing, a little later.
`importlib.util.LazyLoader` cannot do this on Python 3.11: the import statement reads the
module's `__spec__`, and a lazy module loads itself on any attribute read.

Neither process loads OpenSSL (libcrypto and ssl.py's enums: 5 MB in each) unless a TLS link
or server needs it, which a loopback gateway never does. `without_openssl()` imports asyncio,
hashlib and hmac while OpenSSL's modules cannot be imported, as on a Python built without them:
asyncio holds no `ssl` until the stand-in for it loads the real one and hands it over (asyncio
binds it at its import and reads two of its names there, so no stand-in could be bound
instead); hashlib and hmac keep Python's own SHA-2 and digest comparison for good (SHA-256 at
~240 MB/s here, OpenSSL's ~1.3 GB/s: a 10 MB attachment ~40 ms instead of ~8), and hashlib its
own algorithms only (no scrypt, which nothing here uses).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from collections.abc import Callable
from functools import partial
from typing import Any

UNUSED_AT_START = ("importlib.metadata", "urllib.request", "pickle", "bz2", "lzma")
# OpenSSL's modules, and what is imported once without them (hashlib and hmac for good).
_OPENSSL = ("ssl", "_ssl", "_hashlib")
_WITHOUT_OPENSSL = ("asyncio", "hashlib", "hmac")

_swap = threading.Lock()


class _Deferred(types.ModuleType):
    """Stands in for a module until one of its attributes is read; `on_load`, if given, gets
    the real module then."""

    def __init__(
        self, name: str, on_load: Callable[[types.ModuleType], None] | None = None
    ) -> None:
        super().__init__(name)
        self.__on_load = on_load

    def take_on_load(self) -> Callable[[types.ModuleType], None] | None:
        """The hook for the real module, once (the first thread to load it runs it)."""
        with _swap:
            hook, self.__on_load = self.__on_load, None
        return hook

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
    hook = stub.take_on_load()
    # Whoever bound the stand-in (`import urllib.request`) reads the real names from now on.
    stub.__dict__.update(real.__dict__)
    if hook is not None:
        hook(real)
    return real


def defer(module_name: str, on_load: Callable[[types.ModuleType], None] | None = None) -> bool:
    """Put a stand-in for `module_name` into `sys.modules` (`on_load` gets the real module when
    it loads); False if it is imported already or cannot be found (then nothing changes)."""
    if module_name in sys.modules:
        return False
    parent_name, _, child = module_name.rpartition(".")
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    stub = _Deferred(module_name, on_load)
    # What the import statement reads, and what code scanning `sys.modules` for files reads
    # (inspect.getmodule): everything else comes from the real module.
    stub.__spec__ = spec
    stub.__file__ = spec.origin
    stub.__loader__ = spec.loader
    sys.modules[module_name] = stub
    if parent_name:
        setattr(sys.modules[parent_name], child, stub)
    return True


def without_openssl() -> bool:
    """Import asyncio, hashlib and hmac with OpenSSL's modules out of reach, and a stand-in for
    `ssl` that gives asyncio the real one when it loads; False if any of them is imported
    already (then nothing changes)."""
    if any(name in sys.modules for name in (*_OPENSSL, *_WITHOUT_OPENSSL)):
        return False
    if importlib.util.find_spec("ssl") is None:
        return False
    for name in _OPENSSL:
        sys.modules[name] = None  # type: ignore[assignment]  # importing it raises ImportError
    try:
        for name in _WITHOUT_OPENSSL:
            importlib.import_module(name)
    finally:
        for name in _OPENSSL:
            del sys.modules[name]
    # Exactly the modules that found no ssl just now get it back when it loads.
    without = [
        module
        for module in list(sys.modules.values())
        if isinstance(module, types.ModuleType) and module.__dict__.get("ssl", False) is None
    ]
    defer("ssl", partial(_give_ssl, without))
    return True


def _give_ssl(modules: list[types.ModuleType], ssl: types.ModuleType) -> None:
    for module in modules:
        module.ssl = ssl  # type: ignore[attr-defined]
        if module.__name__ == "asyncio.sslproto":  # read at its import when ssl is there
            module.SSLAgainErrors = (ssl.SSLWantReadError, ssl.SSLSyscallError)  # type: ignore[attr-defined]


def defer_unused_modules() -> None:
    """Stand-ins for `UNUSED_AT_START` and `ssl`; call it first thing, before asyncio or
    websockets is imported."""
    without_openssl()
    for module_name in UNUSED_AT_START:
        defer(module_name)
