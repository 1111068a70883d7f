"""Both processes start without the standard modules websockets and logging import but do not
use (smaller, sooner), and a program that does use one gets the real module."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

from desktop.common.deferred import UNUSED_AT_START

# What the deferred modules pull in; none is imported by the app or the gateway otherwise.
HEAVY = ("email.message", "zipfile", "csv", "http.client", "_pickle")


def run_python(code: str, **env: str) -> Any:
    """Run `code` in a fresh interpreter; the JSON it prints last."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"PATH": "/usr/bin:/bin", "QT_QPA_PLATFORM": "offscreen", **env},
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result


LOADED = f"""
    import json, sys
    print(json.dumps({{m: m in sys.modules and type(sys.modules[m]).__name__ == "module"
                      for m in {UNUSED_AT_START + HEAVY!r}}}))
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
    """
    loaded = run_python(textwrap.dedent(code) + textwrap.dedent(LOADED))
    assert not any(loaded.values()), loaded


def test_without_the_stand_ins_websockets_loads_them() -> None:
    # The mechanism's own check: the same imports, no stand-ins.
    code = "import websockets.asyncio.client, logging.handlers\n" + textwrap.dedent(LOADED)
    loaded = run_python(code)
    assert all(loaded[m] for m in UNUSED_AT_START), loaded


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
        print(json.dumps({
            # A gateway off this machine still goes through the system proxy.
            "proxy": get_proxy(parse_uri("ws://gateway.example:8642/api/ws")),
            "loopback": get_proxy(parse_uri("ws://127.0.0.1:8642/api/ws")),
            "version": version("websockets"),
            "pickle": pickle.loads(pickle.dumps([1, "two"])),
        }))
    """
    got = run_python(code, http_proxy="http://proxy.example:3128", no_proxy="127.0.0.1")
    assert got["proxy"] == "http://proxy.example:3128"
    assert got["loopback"] is None
    assert got["version"] and str(got["version"])[0].isdigit()
    assert got["pickle"] == [1, "two"]


def test_nothing_is_replaced_that_is_imported_or_missing() -> None:
    code = """
        import json, sys, urllib.parse
        from desktop.common.deferred import defer
        print(json.dumps([defer("urllib.parse"), defer("no_such_module_here"),
                          type(sys.modules["urllib.parse"]).__name__]))
    """
    assert run_python(code) == [False, False, "module"]
