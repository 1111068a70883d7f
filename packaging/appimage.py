"""Lays out an AppDir from the one-folder build and, where appimagetool exists, makes the AppImage.

No package registry this project can use ships appimagetool or the AppImage runtime (Debian has
only libappimage; the PyPI and npm AppImage builders download appimagetool from GitHub at build
time), so without one on PATH the AppDir is built and checked and the AppImage step is skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

APP = "hermes-qt"
# AppRun: the entry an AppImage executes; it finds the bundle next to itself, wherever mounted.
APPRUN = f"""#!/bin/sh
HERE="$(dirname "$(readlink -f "$0")")"
exec "$HERE/usr/lib/{APP}/{APP}" "$@"
"""


@dataclass(frozen=True, slots=True)
class AppDirInputs:
    bundle: Path
    desktop_template: Path
    svg_icon: Path
    png_icon: Path
    metainfo: Path


def stage_appdir(inputs: AppDirInputs, appdir: Path) -> Path:
    """The AppDir layout appimagetool expects; hard links keep the copy of the bundle cheap."""
    if appdir.exists():
        shutil.rmtree(appdir)
    lib = appdir / "usr" / "lib" / APP
    try:
        shutil.copytree(inputs.bundle, lib, symlinks=True, copy_function=os.link)
    except OSError:  # another file system: a plain copy
        shutil.rmtree(lib, ignore_errors=True)
        shutil.copytree(inputs.bundle, lib, symlinks=True)
    apprun = appdir / "AppRun"
    apprun.write_text(APPRUN)
    apprun.chmod(0o755)
    desktop = inputs.desktop_template.read_text().replace("@EXEC@", APP)
    (appdir / f"{APP}.desktop").write_text(desktop)
    shutil.copyfile(inputs.png_icon, appdir / f"{APP}.png")
    (appdir / ".DirIcon").symlink_to(f"{APP}.png")
    for dest, source in (
        (f"usr/share/applications/{APP}.desktop", None),
        (f"usr/share/icons/hicolor/scalable/apps/{APP}.svg", inputs.svg_icon),
        (f"usr/share/icons/hicolor/256x256/apps/{APP}.png", inputs.png_icon),
        (f"usr/share/metainfo/{inputs.metainfo.name}", inputs.metainfo),
    ):
        target = appdir / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        if source is None:
            target.write_text(desktop)
        else:
            shutil.copyfile(source, target)
    return appdir


def find_appimagetool() -> str | None:
    return shutil.which("appimagetool") or shutil.which("appimagetool-x86_64.AppImage")


def build_appimage(appdir: Path, out: Path, tool: str) -> Path:
    env = {**os.environ, "ARCH": os.uname().machine}
    subprocess.run([tool, "--no-appstream", str(appdir), str(out)], check=True, env=env)
    return out
