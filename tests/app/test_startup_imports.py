"""What a start imports before its window shows: not what only later work needs."""

from __future__ import annotations

import os
import subprocess
import sys

# Everything the app imports to build its core and its window (desktop/app/main.py).
BUILT = (
    "desktop.app.main",
    "desktop.app.assembly",
    "desktop.core.profile.assembly",
    "desktop.ui.window.main_window",
)


def _imported_by_a_start() -> set[str]:
    probe = f"import sys\nfor m in {BUILT!r}:\n    __import__(m)\nprint(' '.join(sys.modules))\n"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    return set(out.stdout.split())


def test_the_socket_library_waits_for_the_first_link() -> None:
    """websockets (with the email, http and urllib modules it brings) cost ~20 ms before the
    window showed; the first link to open imports it."""
    imported = _imported_by_a_start()
    assert "desktop.core.link.client" in imported
    assert not {m for m in imported if m.split(".")[0] == "websockets"}
    assert "desktop.core.link.transport" not in imported
