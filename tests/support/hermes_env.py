"""A cached venv with the real hermes-agent 0.19.0, and a helper that runs `hermes serve` for tests.

The venv lives under $HERMES_QT_TEST_CACHE (default ~/.cache/hermes-qt-tests) and is built once
with pip ($HERMES_QT_HERMES_BIN may name an existing 0.19.0 `hermes` instead). Tests that need it
call `require_hermes()` and are skipped, with the reason, when it cannot be built (no network,
no pip). `hermes_gateway()` writes a HERMES_HOME whose config points the agent at an
OpenAI-compatible server on loopback and starts the gateway on a free port.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import venv
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from desktop.core.launcher import HermesServeLauncher

HERMES_VERSION = "0.19.0"
PIP_TIMEOUT = 900
_failure: str | None = None


class HermesUnavailable(RuntimeError):
    """The hermes venv could not be built here."""


def cache_dir() -> Path:
    root = os.environ.get("HERMES_QT_TEST_CACHE") or Path.home() / ".cache" / "hermes-qt-tests"
    return Path(root)


def venv_dir() -> Path:
    return cache_dir() / f"hermes-agent-{HERMES_VERSION}"


def _bin(name: str) -> Path:
    return venv_dir() / ("Scripts" if os.name == "nt" else "bin") / name


def hermes_bin() -> Path:
    """Path to the `hermes` executable, building the cached venv first if needed."""
    global _failure
    override = os.environ.get("HERMES_QT_HERMES_BIN")
    if override:
        # A developer's existing hermes-agent install (must be 0.19.0 for the tests' facts).
        return Path(override)
    if _failure is not None:
        raise HermesUnavailable(_failure)
    stamp = venv_dir() / ".hermes-qt-ready"
    if stamp.exists() and _bin("hermes").exists():
        return _bin("hermes")
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / ".lock", "w") as lock:
        # Parallel test processes build it once; the others wait here.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and _bin("hermes").exists():
            return _bin("hermes")
        try:
            _build()
        except (OSError, subprocess.SubprocessError) as exc:
            _failure = f"cannot build a hermes-agent=={HERMES_VERSION} venv: {exc}"
            raise HermesUnavailable(_failure) from exc
        stamp.write_text(HERMES_VERSION)
    return _bin("hermes")


def _build() -> None:
    if not _bin("python").exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir())
    log = cache_dir() / "pip.log"
    with open(log, "wb") as out:
        proc = subprocess.run(
            [str(_bin("python")), "-m", "pip", "install", "-q", f"hermes-agent=={HERMES_VERSION}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=PIP_TIMEOUT,
            check=False,
        )
    if proc.returncode != 0 or not _bin("hermes").exists():
        tail = log.read_text(errors="replace")[-800:]
        raise subprocess.SubprocessError(f"pip exited {proc.returncode}: {tail}")


def require_hermes() -> Path:
    """`hermes_bin()`, or skip the calling test with the reason it is unavailable."""
    try:
        return hermes_bin()
    except HermesUnavailable as exc:
        pytest.skip(str(exc))


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
async def hermes_gateway(home: Path, base_url: str) -> AsyncIterator[HermesGateway]:
    """Run `hermes serve --host 127.0.0.1 --port 0` against `base_url`; stopped on exit."""
    hermes = require_hermes()
    write_config(home, base_url)
    launcher = HermesServeLauncher(
        home,
        hermes=str(hermes),
        # Keep the agent off the user's real config, plugins and network extras.
        extra_env={"HOME": str(home), "NO_COLOR": "1", "PYTHONWARNINGS": "ignore"},
        ready_timeout=180.0,
    )
    try:
        endpoint = await launcher.endpoint()
        assert endpoint.token is not None
        yield HermesGateway(endpoint.url, endpoint.token, launcher)
    finally:
        await launcher.close()


if __name__ == "__main__":
    # `python -m tests.support.hermes_env` builds the cache ahead of a test run. Failing to
    # build it is not fatal: the real-Hermes tests then skip, each with this reason.
    try:
        print(hermes_bin())
    except HermesUnavailable as exc:
        print(f"hermes-agent tests will be skipped: {exc}")
    sys.exit(0)
