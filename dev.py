#!/usr/bin/env python3
"""Set-up in one command: `python3 dev.py run` launches the app, `python3 dev.py test` tests it.

Needs nothing but Python >= 3.11. It creates `.venv`, installs the project into it (editable, with
the extras the command needs), makes sure the few system libraries Qt's wheels expect are present
(installing them with apt-get when it can), and then runs the command.
"""

from __future__ import annotations

import ctypes.util
import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")

# Shared libraries PySide6's wheels load but do not ship (Debian package names).
QT_SYSTEM_LIBS = {
    "EGL": "libegl1",
    "GL": "libgl1",
    "fontconfig": "libfontconfig1",
    "xkbcommon": "libxkbcommon0",
    "dbus-1": "libdbus-1-3",
}
# Needed only to show a window on an X server (xcb platform plugin).
XCB_LIBS = {
    "xcb-cursor": "libxcb-cursor0",
    "xkbcommon-x11": "libxkbcommon-x11-0",
    "xcb-icccm": "libxcb-icccm4",
    "xcb-keysyms": "libxcb-keysyms1",
    "xcb-shape": "libxcb-shape0",
    "xcb-render-util": "libxcb-render-util0",
    "xcb-image": "libxcb-image0",
}


def _say(msg: str) -> None:
    print(f"[dev] {msg}", flush=True)


def _ensure_system_libs(libs: dict[str, str]) -> None:
    if not sys.platform.startswith("linux"):
        return
    missing = [pkg for lib, pkg in libs.items() if ctypes.util.find_library(lib) is None]
    if not missing:
        return
    if shutil.which("apt-get") and os.geteuid() == 0:
        _say(f"installing system libraries for Qt: {' '.join(missing)}")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=False, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True, env=env)
    else:
        _say(f"Qt may need these system packages: {' '.join(missing)} (install them as root)")


def _ensure_venv(extras: str) -> None:
    if not PY.exists():
        _say("creating .venv")
        venv.EnvBuilder(with_pip=True).create(VENV)
    # Reinstall only when the project metadata or the wanted extras change.
    stamp = VENV / f".installed-{extras or 'base'}"
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest:
        return
    target = f".[{extras}]" if extras else "."
    _say(f"installing hermes-qt{f'[{extras}]' if extras else ''} into .venv")
    subprocess.run([str(PY), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    subprocess.run([str(PY), "-m", "pip", "install", "-q", "-e", target], check=True, cwd=ROOT)
    stamp.write_text(digest)


def _run(cmd: list[str], env: dict[str, str] | None = None) -> int:
    return subprocess.run(cmd, cwd=ROOT, env=env, check=False).returncode


def cmd_run(args: list[str]) -> int:
    _ensure_system_libs({**QT_SYSTEM_LIBS, **XCB_LIBS})
    _ensure_venv("")
    return _run([str(BIN / "hermes-qt"), *args])


def cmd_test(args: list[str]) -> int:
    _ensure_system_libs(QT_SYSTEM_LIBS)
    _ensure_venv("test")
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    steps: list[tuple[str, list[str]]] = [
        ("ruff check", [str(PY), "-m", "ruff", "check", "."]),
        ("ruff format --check", [str(PY), "-m", "ruff", "format", "--check", "."]),
        ("mypy (strict, the whole package)", [str(PY), "-m", "mypy"]),
        # The real-Hermes tests need each real line (0.19.0, 0.20.1, 0.22) in a cached venv: built
        # here, outside any per-test timeout (a few minutes the first time, then instant).
        (
            "real Hermes test venvs (0.19.0, 0.20.1.2, 0.22.2, 0.21.5)",
            [str(PY), "-m", "tests.support.hermes_env"],
        ),
        ("pytest", [str(PY), "-m", "pytest", *args]),
    ]
    for name, cmd in steps:
        _say(name)
        rc = _run(cmd, env)
        if rc != 0:
            _say(f"{name} failed (exit {rc})")
            return rc
    return 0


def cmd_bench(args: list[str]) -> int:
    _ensure_system_libs(QT_SYSTEM_LIBS)
    _ensure_venv("test,bench")
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    return _run([str(PY), "-m", "bench", *args], env)


def cmd_reliability(args: list[str]) -> int:
    _ensure_system_libs(QT_SYSTEM_LIBS)
    _ensure_venv("test")
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    return _run([str(PY), "-m", "tests.reliability.report", *args], env)


COMMANDS = {
    "run": cmd_run,
    "test": cmd_test,
    "bench": cmd_bench,
    "reliability": cmd_reliability,
}


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print(f"usage: python3 dev.py {{{','.join(COMMANDS)}}} [args...]", file=sys.stderr)
        return 2
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py may be started by an older python3
        print("hermes-qt needs Python >= 3.11", file=sys.stderr)
        return 2
    return COMMANDS[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
