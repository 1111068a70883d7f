"""Both processes start without the standard modules websockets and logging import but do not
use, and without OpenSSL (smaller, sooner); a program that does use one gets the real module,
and a TLS link still works."""

from __future__ import annotations

import builtins
import subprocess
import sys
import textwrap
import threading
import types
from pathlib import Path
from typing import Any

import pytest

from desktop.common import deferred
from desktop.common.deferred import UNUSED_AT_START
from tests.support.fresh_python import run_python
from tests.support.gateway_process import TOKEN, gateway_process

# What the deferred modules pull in; none is imported by the app or the gateway otherwise.
HEAVY = ("email.message", "zipfile", "csv", "http.client", "_pickle", "_bz2", "_lzma")
# OpenSSL's modules: asyncio's import loads `ssl`, hashlib's and hmac's `_hashlib`.
OPENSSL = ("ssl", "_ssl", "_hashlib")


LOADED = f"""
    import json, os, sys
    loaded = {{m: m in sys.modules and type(sys.modules[m]).__name__ == "module"
              for m in {UNUSED_AT_START + HEAVY + OPENSSL!r}}}
    with open(f"/proc/{{os.getpid()}}/maps", encoding="utf-8") as maps:
        loaded["libcrypto"] = "libcrypto" in maps.read()  # OpenSSL's library, 3.6 MB resident
    print(json.dumps(loaded))
"""


def test_the_gateway_starts_without_them() -> None:
    # Importing its entry module runs what `python -m desktop.gateway` runs before main().
    loaded = run_python("import desktop.gateway.__main__\n" + textwrap.dedent(LOADED))
    assert not any(loaded.values()), loaded


def test_the_app_starts_without_them() -> None:
    code = """
        import contextlib
        from desktop.app.main import main
        with contextlib.suppress(SystemExit), contextlib.redirect_stdout(None):
            main(["--version"])
        import desktop.core.link.transport  # the app's websockets client
        import logging.handlers
        # What hashes and compares in the app: Python's own SHA-256, no OpenSSL for it.
        import hashlib, secrets
        assert secrets.compare_digest(hashlib.sha256(b"abc").hexdigest(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    """
    loaded = run_python(textwrap.dedent(code) + textwrap.dedent(LOADED))
    assert not any(loaded.values()), loaded


def test_without_the_stand_ins_websockets_loads_them() -> None:
    # The mechanism's own check: the same imports, no stand-ins.
    code = "import websockets.asyncio.client, logging.handlers, secrets\n" + textwrap.dedent(LOADED)
    loaded = run_python(code)
    assert all(loaded[m] for m in (*UNUSED_AT_START, *OPENSSL, "libcrypto")), loaded


def test_a_module_used_after_all_is_the_real_one() -> None:
    code = """
        import json
        from desktop.common.deferred import defer_unused_modules
        defer_unused_modules()
        import websockets.asyncio.client
        from websockets.proxy import get_proxy
        from websockets.uri import parse_uri
        import importlib.metadata._meta  # a submodule first: its package loads for real
        from importlib.metadata import version
        import pickle
        import shutil, bz2, lzma
        print(json.dumps({
            # A gateway off this machine still goes through the system proxy.
            "proxy": get_proxy(parse_uri("ws://gateway.example:8642/api/ws")),
            "loopback": get_proxy(parse_uri("ws://127.0.0.1:8642/api/ws")),
            "version": version("websockets"),
            "pickle": pickle.loads(pickle.dumps([1, "two"])),
            "archives": [shutil._BZ2_SUPPORTED, shutil._LZMA_SUPPORTED,
                         bz2.decompress(bz2.compress(b"bz2")).decode(),
                         lzma.decompress(lzma.compress(b"xz")).decode()],
        }))
    """
    got = run_python(code, http_proxy="http://proxy.example:3128", no_proxy="127.0.0.1")
    assert got["proxy"] == "http://proxy.example:3128"
    assert got["loopback"] is None
    assert got["version"] and str(got["version"])[0].isdigit()
    assert got["pickle"] == [1, "two"]
    assert got["archives"] == [True, True, "bz2", "xz"]


@pytest.fixture
def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (OpenSSL's command line)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subject = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    files = ["-keyout", str(key), "-out", str(cert)]
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            *subject,
            *files,
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


def test_a_tls_link_works_where_openssl_loads_on_first_use(
    tmp_path: Path, self_signed: tuple[Path, Path]
) -> None:
    # Both ends deferred: the gateway serves TLS, the app's connection test connects over it.
    # Without asyncio given the real ssl when it loads, neither end could do a handshake.
    cert, key = self_signed
    with gateway_process(tmp_path / "gateway", "--tls-cert", str(cert), "--tls-key", str(key)) as (
        _proc,
        url,
    ):
        code = f"""
            import desktop.app.main  # the app's start, first
            import asyncio, json, sys
            before = "_ssl" in sys.modules
            from desktop.core.link.check import check_gateway
            import ssl  # as the app makes a profile's context: ssl loads here
            context = ssl.create_default_context(cafile={str(cert)!r})
            told = asyncio.run(check_gateway({url!r}, {TOKEN!r}, ssl=context))
            print(json.dumps([before, "_ssl" in sys.modules, told]))
        """
        before, after, told = run_python(code)
    assert url.startswith("wss://127.0.0.1:")
    assert (before, after) == (False, True)
    assert "connected" in told.lower(), told


def test_nothing_is_replaced_that_is_imported_or_missing() -> None:
    code = """
        import json, sys, urllib.parse
        from desktop.common.deferred import defer
        print(json.dumps([defer("urllib.parse"), defer("no_such_module_here"),
                          type(sys.modules["urllib.parse"]).__name__]))
    """
    assert run_python(code) == [False, False, "module"]


class _RacingModules:
    """`sys.modules` as deferred.py reads it (`get` and `del` only), where the first look at the
    stand-in waits until a second thread has looked too, or is held at the lock (as it is while
    the lock works)."""

    def __init__(self, real: dict[str, Any], turn: threading.Condition) -> None:
        self.real, self.turn, self.looks, self.held = real, turn, 0, False

    def get(self, key: str, default: Any = None) -> Any:
        found = self.real.get(key, default)
        with self.turn:
            self.looks += 1
            self.turn.notify_all()
            if self.looks == 1:
                assert self.turn.wait_for(lambda: self.looks > 1 or self.held, timeout=30)
        return found

    def __delitem__(self, key: str) -> None:
        del self.real[key]


class _NotedLock:
    """The real lock, noting when a thread has to wait for it."""

    def __init__(self, lock: Any, modules: _RacingModules) -> None:
        self.lock, self.modules = lock, modules

    def __enter__(self) -> None:
        if not self.lock.acquire(blocking=False):
            with self.modules.turn:
                self.modules.held = True
                self.modules.turn.notify_all()
            self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def test_two_threads_reading_a_stand_in_at_once_import_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both threads look at sys.modules before either takes the stand-in out: without the lock,
    # both remove it (a KeyError) or the second removes the real module and imports a copy.
    (tmp_path / "deferred_probe.py").write_text(
        "import builtins\nbuiltins.deferred_probe_loads = "
        "getattr(builtins, 'deferred_probe_loads', 0) + 1\nVALUE = 42\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "deferred_probe", raising=False)
    monkeypatch.setattr(builtins, "deferred_probe_loads", 0, raising=False)
    assert deferred.defer("deferred_probe")
    stub = sys.modules["deferred_probe"]
    modules = _RacingModules(sys.modules, threading.Condition())
    monkeypatch.setattr(deferred, "sys", types.SimpleNamespace(modules=modules))
    monkeypatch.setattr(deferred, "_swap", _NotedLock(deferred._swap, modules))
    got: list[object] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            got.append(stub.VALUE)
        except BaseException as exc:  # (reported by the assertions below)
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    try:
        assert errors == []
        assert got == [42, 42]
        assert builtins.deferred_probe_loads == 1  # type: ignore[attr-defined]
        assert type(sys.modules["deferred_probe"]) is types.ModuleType
    finally:
        sys.modules.pop("deferred_probe", None)
