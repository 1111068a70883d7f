"""The command line: a version, and one line instead of a Qt abort when there is no display."""

from __future__ import annotations

import os
import subprocess
import sys

from desktop import __version__
from desktop.app.display import display_problem


def _run_app(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "desktop", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )


def _env_without_display() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DISPLAY", "WAYLAND_DISPLAY"}}
    env.pop("QT_QPA_PLATFORM", None)
    return env


def test_version_flag_prints_the_version() -> None:
    proc = _run_app("--version", env=_env_without_display())
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"hermes-qt {__version__}"


def test_no_display_exits_with_one_line_and_a_hint() -> None:
    proc = _run_app(env=_env_without_display())
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "no display" in lines[0]
    assert "xvfb-run" in lines[0] and "hermes-qt-gateway" in lines[0]
    assert "Traceback" not in proc.stderr and "Aborted" not in proc.stderr


def test_offscreen_platform_counts_as_a_display() -> None:
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None


def test_wayland_or_x11_display_is_enough() -> None:
    assert display_problem({"WAYLAND_DISPLAY": "wayland-0"}, "linux") is None


def test_other_platforms_are_not_second_guessed() -> None:
    assert display_problem({}, "darwin") is None
