"""Icons and themes are package data read with importlib.resources: they load from a zip too."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.packaging.modules import ROOT

# Run in a child: it imports `desktop` from the zip alone, with nothing of the checkout on its path.
_CHILD = """
import sys
from PySide6.QtWidgets import QApplication
app = QApplication([])
import desktop
from desktop.ui.platform.resources import icon, read_resource_text, resource_path
from desktop.ui.theme import ThemeManager, ThemeMode
assert desktop.__file__.startswith(sys.argv[1]), desktop.__file__
ThemeManager(app, ThemeMode.DARK)
assert "chatView" in app.styleSheet()
pixmap = icon("send").pixmap(48, 48)
tinted = icon("send", "#aab3c2").pixmap(48, 48)
assert not pixmap.isNull() and not tinted.isNull()
assert resource_path("icons", "app.svg").read_text().startswith("<svg")
print("resources ok from", resource_path("icons", "app.svg").parent.parent.name)
"""


def _zip_package(out: Path) -> Path:
    with zipfile.ZipFile(out, "w") as zf:
        for path in sorted((ROOT / "desktop").rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                zf.write(path, path.relative_to(ROOT).as_posix())
    return out


def test_theme_and_icons_load_when_the_package_is_imported_from_a_zip(tmp_path: Path) -> None:
    archive = _zip_package(tmp_path / "hermes-qt.zip")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(archive)}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(archive)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "resources ok" in proc.stdout


def test_every_resource_file_is_declared_package_data() -> None:
    import tomllib

    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["desktop"]
    shipped = {
        p.relative_to(ROOT / "desktop").as_posix()
        for p in (ROOT / "desktop" / "resources").rglob("*")
        if p.is_file()
    }
    declared = {
        p.relative_to(ROOT / "desktop").as_posix()
        for pattern in patterns
        for p in (ROOT / "desktop").glob(pattern)
    }
    assert shipped and shipped == declared, sorted(shipped ^ declared)
