"""Shortcuts after a file dialog closes, on a real X server (issue #27).

On an X display without a window manager nothing gave the window the input focus back when a
file dialog closed: typed text still reached the message box, but no window shortcut fired
(Qt matches those in the active window only), so Ctrl+K or Ctrl+N did nothing and a message
meant for another chat went to this one. With a window manager (openbox) the window is
activated again by the manager and shortcuts work. The window now takes the focus back itself
when one of its dialogs closes and no window of the app is active.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.app.test_startup_errors import _xdotool, _xvfb_server

ROOT = Path(__file__).resolve().parents[3]


def _lines(child: subprocess.Popen[str]) -> tuple[queue.Queue[str], threading.Thread]:
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            lines.put(line.strip())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return lines, reader


def _gone(env: dict[str, str], name: str) -> bool:
    found = subprocess.run(
        ["xdotool", "search", "--onlyvisible", "--name", name],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return found.returncode != 0


@pytest.mark.slow
def test_window_shortcuts_fire_after_a_file_dialog_closes_without_a_window_manager() -> None:
    with _xvfb_server() as (display, _server):
        env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb"}
        env["PYTHONPATH"] = str(ROOT)
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.ui.window.dialog_focus_child"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        lines, reader = _lines(child)
        try:
            assert lines.get(timeout=30) == "ready"
            window = _xdotool(env, "search", "--sync", "--onlyvisible", "--name", "^Hermes$")
            _xdotool(env, "windowfocus", "--sync", window.split()[-1])
            _xdotool(env, "type", "--delay", "20", "hello")
            _xdotool(env, "key", "ctrl+shift+s")  # Export: a file dialog
            _xdotool(env, "search", "--sync", "--onlyvisible", "--name", "^Export chat$")
            _xdotool(env, "key", "Escape")
            for _ in range(100):
                if _gone(env, "^Export chat$"):
                    break
            _xdotool(env, "type", "--delay", "20", " again")
            _xdotool(env, "key", "F1")
            try:
                said = lines.get(timeout=10)
            except queue.Empty:
                said = ""
            assert said == "shortcut fired: hello again", (
                "F1 fired after the dialog closed, and the typing reached the message box"
            )
        finally:
            child.kill()
            child.wait(10)
            reader.join(10)
            assert child.stdout is not None
            child.stdout.close()
