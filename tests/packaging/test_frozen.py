"""The frozen build and its installers work: version, self-test, gateway, .deb layout, slimness.

Slow (PyInstaller plus compression take minutes), so it runs only with HERMES_QT_PACKAGING_TEST=1;
it reuses build/pyinstaller when that bundle is newer than every source file.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from desktop import __version__
from tests.packaging.modules import PACKAGING, ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1200),
    pytest.mark.skipif(
        os.environ.get("HERMES_QT_PACKAGING_TEST") != "1",
        reason="set HERMES_QT_PACKAGING_TEST=1 to build and check the frozen app",
    ),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux artifacts"),
]

BUNDLE = ROOT / "build" / "pyinstaller" / "dist" / "hermes-qt"


@dataclass(frozen=True)
class Build:
    exe: Path
    deb: Path
    tarball: Path
    log: str


@pytest.fixture(scope="module")
def build() -> Iterator[Build]:
    proc = subprocess.run(
        [sys.executable, str(PACKAGING / "build.py"), "--reuse-fresh", "--fast"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=1100,
        check=False,
    )
    log = proc.stdout + proc.stderr
    print(log)  # sizes and start-up times end up in the test report
    assert proc.returncode == 0, log[-4000:]
    arch = subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
    ).stdout.strip()
    yield Build(
        exe=BUNDLE / "hermes-qt",
        deb=ROOT / "dist" / f"hermes-qt_{__version__}_{arch}.deb",
        tarball=ROOT / "dist" / f"hermes-qt-{__version__}-linux-{os.uname().machine}.tar.gz",
        log=log,
    )


def _run(exe: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, env=env, timeout=timeout, check=False
    )


def test_frozen_app_prints_its_version(build: Build) -> None:
    proc = _run(build.exe, "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"hermes-qt {__version__}"


def test_frozen_app_runs_through_a_symlink_like_usr_bin(build: Build, tmp_path: Path) -> None:
    link = tmp_path / "hermes-qt"
    link.symlink_to(build.exe)
    proc = _run(link, "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"hermes-qt {__version__}"


def test_frozen_app_completes_a_chat_round_trip(build: Build, tmp_path: Path) -> None:
    proc = _run(build.exe, "--self-test", "--data-dir", str(tmp_path / "data"))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]


async def test_frozen_gateway_subcommand_comes_up_on_loopback(build: Build, tmp_path: Path) -> None:
    env = {**os.environ, "HERMES_QT_GATEWAY_TOKEN": "packaging-test-token", "PYTHONUNBUFFERED": "1"}
    proc = await asyncio.create_subprocess_exec(
        str(build.exe),
        "gateway",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--data-dir",
        str(tmp_path / "gw"),
        "--config-dir",
        str(tmp_path / "cfg"),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
    finally:
        if proc.returncode is None:
            proc.terminate()
        await proc.wait()
    text = line.decode()
    assert text.startswith("HERMES_QT_GATEWAY_READY url=ws://127.0.0.1:"), text
    assert text.rstrip().endswith("/api/ws")


def test_bundle_carries_resources_and_needed_qt_plugins(build: Build) -> None:
    internal = BUNDLE / "_internal"
    for rel in (
        "desktop/resources/icons/app.svg",
        "desktop/resources/themes/dark.qss",
        "PySide6/Qt/plugins/platforms/libqxcb.so",
        "PySide6/Qt/plugins/platforms/libqoffscreen.so",
        "PySide6/Qt/plugins/iconengines/libqsvgicon.so",
        "PySide6/Qt/plugins/imageformats/libqsvg.so",
        "PySide6/Qt/lib/libQt6Svg.so.6",
    ):
        assert (internal / rel).exists(), rel


def test_bundle_leaves_out_unused_qt_and_stdlib(build: Build) -> None:
    names = {p.name for p in BUNDLE.rglob("*")}
    unwanted = (
        "QtWebEngineCore",
        "Qt3DCore",
        "QtQml",
        "Qt6Qml",
        "Qt6Quick",
        "Qt6Network",
        "Qt6Pdf",
    )
    offenders = sorted(n for n in names if any(u in n for u in unwanted))
    assert offenders == []
    assert not (BUNDLE / "_internal" / "PySide6" / "Qt" / "qml").exists()
    assert "tkinter" not in names and "_tkinter" not in " ".join(names)
    # Libraries only the GTK theme plugin needed must not ride along.
    assert not any(n.startswith(("libgtk-3", "libcairo", "libpango")) for n in names)


def test_deb_installs_command_menu_entry_and_icons(build: Build) -> None:
    info = subprocess.run(
        ["dpkg-deb", "--info", str(build.deb)], capture_output=True, text=True, check=False
    )
    assert info.returncode == 0, info.stderr
    assert "Package: hermes-qt" in info.stdout and f"Version: {__version__}" in info.stdout
    assert "libxcb-cursor0" in info.stdout and "libgl1" in info.stdout
    contents = subprocess.run(
        ["dpkg-deb", "--contents", str(build.deb)], capture_output=True, text=True, check=False
    ).stdout
    for path in (
        "./usr/share/applications/hermes-qt.desktop",
        "./usr/share/icons/hicolor/scalable/apps/hermes-qt.svg",
        "./usr/share/icons/hicolor/256x256/apps/hermes-qt.png",
        "./opt/hermes-qt/hermes-qt",
        "./opt/hermes-qt/_internal/desktop/resources/icons/app.svg",
    ):
        assert path in contents, path
    assert "./usr/bin/hermes-qt -> /opt/hermes-qt/hermes-qt" in contents


def test_tarball_unpacks_to_one_versioned_folder(build: Build) -> None:
    with tarfile.open(build.tarball) as tar:
        names = tar.getnames()
    top = f"hermes-qt-{__version__}"
    assert all(n == top or n.startswith(f"{top}/") for n in names)
    assert f"{top}/hermes-qt" in names and f"{top}/share/hermes-qt.desktop" in names
