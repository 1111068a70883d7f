"""The wheel takes the app's icons and themes from the top-level resources/ folder.

Everything else is declared in pyproject.toml. `build_py` copies resources/icons and
resources/themes into the built package as desktop/resources/, where
desktop/ui/platform/resources.py reads them with importlib.resources (a source checkout reads
resources/ itself). The .desktop entry and the AppStream metainfo in resources/ are for the
installers (packaging/), not the wheel.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SOURCE = Path(__file__).resolve().parent / "resources"
# What the app reads at run time; packaging/hermes-qt.spec bundles the same folders.
RUNTIME = ("icons", "themes")


class BuildPyWithResources(build_py):
    """`build_py`, then resources/{icons,themes} copied to desktop/resources in the build."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "desktop" / "resources"
        for name in RUNTIME:
            shutil.copytree(SOURCE / name, target / name, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildPyWithResources})
