"""The .deb lays the app out where a Debian desktop finds it: menu entry, icons, a command."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.packaging.modules import PACKAGING, ROOT, load

deb = load("deb_package")


def _inputs(tmp_path: Path) -> object:
    bundle = tmp_path / "bundle"
    (bundle / "_internal").mkdir(parents=True)
    exe = bundle / "hermes-qt"
    exe.write_text("#!/bin/sh\necho hermes-qt 9.9.9\n")
    exe.chmod(0o700)
    (bundle / "_internal" / "lib.so").write_bytes(b"\0" * 10)
    png = tmp_path / "icon.png"
    png.write_bytes(b"\x89PNG fake")
    return deb.DebInputs(
        bundle=bundle,
        version="9.9.9",
        desktop_template=PACKAGING / "hermes-qt.desktop",
        svg_icon=ROOT / "desktop/resources/icons/app.svg",
        png_icon=png,
    )


def test_control_depends_on_the_gl_and_x_libraries_qt_loads() -> None:
    text = deb.control_text("1.2.3", "amd64", 1000, "2.36")
    fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    assert fields["Package"] == "hermes-qt" and fields["Version"] == "1.2.3"
    assert fields["Architecture"] == "amd64"
    depends = fields["Depends"].split(", ")
    assert depends[0] == "libc6 (>= 2.36)"
    for pkg in ("libgl1", "libegl1", "libxkbcommon0", "libxcb-cursor0", "libfontconfig1"):
        assert pkg in depends
    assert text.endswith("\n") and "\n\n" not in text


def test_staged_tree_has_command_menu_entry_and_icons(tmp_path: Path) -> None:
    root = deb.stage(_inputs(tmp_path), tmp_path / "root")
    exe = root / "opt/hermes-qt/hermes-qt"
    assert os.stat(exe).st_mode & 0o777 == 0o755  # runnable by every user, not just the builder
    assert os.readlink(root / "usr/bin/hermes-qt") == "/opt/hermes-qt/hermes-qt"
    desktop = (root / "usr/share/applications/hermes-qt.desktop").read_text()
    assert "Exec=hermes-qt\n" in desktop and "Icon=hermes-qt\n" in desktop
    assert "@" not in desktop
    assert (root / "usr/share/icons/hicolor/scalable/apps/hermes-qt.svg").read_bytes() == (
        ROOT / "desktop/resources/icons/app.svg"
    ).read_bytes()
    assert (root / "usr/share/icons/hicolor/256x256/apps/hermes-qt.png").exists()
    assert "Version: 9.9.9" in (root / "DEBIAN/control").read_text()


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb")
def test_dpkg_deb_accepts_the_package(tmp_path: Path) -> None:
    path = deb.build_deb(_inputs(tmp_path), tmp_path / "stage", tmp_path / "out", xz_level=0)
    assert path.name == f"hermes-qt_9.9.9_{deb.debian_arch()}.deb"
    info = subprocess.run(
        ["dpkg-deb", "--info", str(path)], capture_output=True, text=True, check=False
    )
    assert info.returncode == 0 and "Package: hermes-qt" in info.stdout
    contents = subprocess.run(
        ["dpkg-deb", "--contents", str(path)], capture_output=True, text=True, check=False
    )
    assert "./usr/bin/hermes-qt -> /opt/hermes-qt/hermes-qt" in contents.stdout
    assert (
        "root/root" in contents.stdout
        and "./usr/share/applications/hermes-qt.desktop" in contents.stdout
    )
