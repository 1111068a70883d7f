"""PySide6's import hook reads every module's source into linecache; the app lets it go."""

from __future__ import annotations

import os
import subprocess
import sys


def test_module_sources_read_by_the_pyside_import_hook_are_not_kept() -> None:
    # A fresh process: in this one every module is imported already and reads nothing.
    probe = (
        "import linecache, PySide6.QtWidgets\n"
        "from desktop.ui.render.markdown import render_markdown\n"
        "render_markdown('**hi**\\n\\n```python\\nx = 1\\n```\\n')\n"
        "print(sum(len(v[2]) for v in linecache.cache.values() if len(v) > 2))\n"
    )
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    lines = int(out.stdout.split()[-1])
    # Without the clean-up: tens of thousands of source lines (markdown-it, pygments, ...).
    assert lines < 500, f"{lines} source lines kept in memory"


def test_modules_imported_after_skip_feature_scan_are_not_read_at_all() -> None:
    # A fresh process, as the app starts: the hook is told before PySide6 comes in.
    probe = (
        "import linecache, sys\n"
        "from desktop.ui.platform.sources import skip_feature_scan\n"
        "skip_feature_scan()\n"
        "import PySide6.QtWidgets\n"
        "from desktop.ui.window.main_window import MainWindow\n"
        "read = [f for f in linecache.cache if f.endswith('.py')]\n"
        "print(len([m for m in sys.modules if m.startswith('desktop.')]), len(read))\n"
    )
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    imported, read = (int(n) for n in out.stdout.split()[-2:])
    assert imported > 100  # the window's modules came in after PySide6
    # Without it: the hook reads the source of each of them (and of every library's module).
    assert read == 0, f"{read} module sources read"
