"""Icons and themes: kept in resources/, read from the package when installed (a zip too) and
from resources/ itself in a source checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.packaging.modules import PACKAGING, RESOURCES, ROOT, load

deb = load("deb_package")
# What the app reads at run time, copied into the package by setup.py (its RUNTIME).
RUNTIME = ("icons", "themes")

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
    """The package as a wheel lays it out: desktop/ with resources/{icons,themes} inside."""
    with zipfile.ZipFile(out, "w") as zf:
        for path in sorted((ROOT / "desktop").rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                zf.write(path, path.relative_to(ROOT).as_posix())
        for name in RUNTIME:
            for path in sorted((RESOURCES / name).rglob("*")):
                if path.is_file():
                    zf.write(path, "desktop/resources/" + path.relative_to(RESOURCES).as_posix())
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


def test_a_source_checkout_reads_the_top_level_resources_folder(tmp_path: Path) -> None:
    """Run from the checkout (nothing built or installed), every icon and theme loads."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    child = (
        "import sys\n"
        "from desktop.ui.platform.resources import resource, resource_root\n"
        "print(resource_root())\n"
        "for rel in sys.argv[1:]:\n"
        "    assert resource(*rel.split('/')).read_bytes(), rel\n"
    )
    files = [p.relative_to(RESOURCES).as_posix() for name in RUNTIME for p in _files(name)]
    proc = subprocess.run(
        [sys.executable, "-c", child, *files],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == str(RESOURCES)


def _files(folder: str) -> list[Path]:
    return sorted(p for p in (RESOURCES / folder).rglob("*") if p.is_file())


def test_every_asset_in_resources_is_shipped_or_packaged() -> None:
    """Each file in resources/ reaches users: the app's icons and themes through the package
    (setup.py and the PyInstaller spec copy the same folders), the menu entry and the
    metainfo through the installers."""
    folders = "(" + ", ".join(f'"{name}"' for name in RUNTIME) + ")"
    assert f"RUNTIME = {folders}" in (ROOT / "setup.py").read_text()
    spec = (PACKAGING / "hermes-qt.spec").read_text()
    assert f"for name in {folders}" in spec, "the frozen build bundles other folders"
    installers = {"hermes-qt.desktop", deb.METAINFO_NAME}
    assets = {p.relative_to(RESOURCES).as_posix() for p in RESOURCES.rglob("*") if p.is_file()}
    runtime = {p.relative_to(RESOURCES).as_posix() for name in RUNTIME for p in _files(name)}
    assert runtime and assets == runtime | installers, sorted(assets ^ (runtime | installers))
    assert not (ROOT / "desktop" / "resources").exists(), "assets belong in resources/"
