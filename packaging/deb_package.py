"""Builds the Debian package: the frozen bundle under /opt/hermes-qt plus menu entry and icons."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

APP = "hermes-qt"
INSTALL_DIR = f"/opt/{APP}"
DESKTOP_PATH = f"usr/share/applications/{APP}.desktop"
SVG_ICON_PATH = f"usr/share/icons/hicolor/scalable/apps/{APP}.svg"
PNG_ICON_PATH = f"usr/share/icons/hicolor/256x256/apps/{APP}.png"

# What Qt's wheels load from the system and PyInstaller deliberately leaves out of the bundle
# (GL/EGL come from the user's graphics driver), plus the X11 libraries the xcb platform plugin
# needs, so that `apt install ./hermes-qt_*.deb` brings a machine to a window.
DEPENDS = (
    "libgl1",
    "libegl1",
    "libfontconfig1",
    "libfreetype6",
    "libxkbcommon0",
    "libxkbcommon-x11-0",
    "libdbus-1-3",
    "libx11-6",
    "libx11-xcb1",
    "libxcb1",
    "libxcb-cursor0",
    "libxcb-icccm4",
    "libxcb-image0",
    "libxcb-keysyms1",
    "libxcb-randr0",
    "libxcb-render-util0",
    "libxcb-shape0",
    "libxcb-xkb1",
)
# Only for a native Wayland session (the app falls back to XWayland) and portal file dialogs.
RECOMMENDS = ("libwayland-client0", "libwayland-cursor0", "libwayland-egl1", "xdg-desktop-portal")


@dataclass(frozen=True, slots=True)
class DebInputs:
    """Everything the package is made of."""

    bundle: Path  # PyInstaller's one-folder output (contains the `hermes-qt` executable)
    version: str
    desktop_template: Path
    svg_icon: Path
    png_icon: Path  # 256x256, rendered from the SVG


def debian_arch() -> str:
    """dpkg's name for this machine's architecture (amd64, arm64, ...)."""
    if shutil.which("dpkg"):
        out = subprocess.run(
            ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
        )
        return out.stdout.strip()
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "armhf"}.get(machine, machine)


def glibc_version() -> str | None:
    """The build host's glibc: the bundle's binaries need at least this one."""
    name, version = platform.libc_ver()
    return version if name == "glibc" and version else None


def control_text(version: str, arch: str, installed_kib: int, glibc: str | None) -> str:
    """The DEBIAN/control file."""
    depends = [f"libc6 (>= {glibc})" if glibc else "libc6", *DEPENDS]
    return (
        f"Package: {APP}\n"
        f"Version: {version}\n"
        "Section: net\n"
        "Priority: optional\n"
        f"Architecture: {arch}\n"
        f"Installed-Size: {installed_kib}\n"
        f"Depends: {', '.join(depends)}\n"
        f"Recommends: {', '.join(RECOMMENDS)}\n"
        "Maintainer: hermes-qt developers <maintainers@hermes-qt.invalid>\n"
        "Description: native Qt chat client for Hermes agent gateways\n"
        " A desktop chat client for agent gateways speaking the Hermes tui_gateway\n"
        " protocol, with an embedded gateway. Built for links that drop and come back:\n"
        " drafts are never lost and prompts are never sent twice.\n"
    )


def stage(inputs: DebInputs, root: Path) -> Path:
    """Lay out the package tree under `root` (emptied first); returns `root`."""
    if root.exists():
        shutil.rmtree(root)
    opt = root / INSTALL_DIR.lstrip("/")
    shutil.copytree(inputs.bundle, opt, symlinks=True)
    usr_bin = root / "usr/bin"
    usr_bin.mkdir(parents=True)
    (usr_bin / APP).symlink_to(f"{INSTALL_DIR}/{APP}")
    desktop = root / DESKTOP_PATH
    desktop.parent.mkdir(parents=True)
    desktop.write_text(inputs.desktop_template.read_text().replace("@EXEC@", APP))
    for source, dest in ((inputs.svg_icon, SVG_ICON_PATH), (inputs.png_icon, PNG_ICON_PATH)):
        target = root / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    _normalise_modes(root)
    debian = root / "DEBIAN"
    debian.mkdir(mode=0o755)
    (debian / "control").write_text(
        control_text(inputs.version, debian_arch(), _size_kib(root), glibc_version())
    )
    return root


def build_deb(inputs: DebInputs, staging: Path, out_dir: Path, *, xz_level: int = 6) -> Path:
    """Stage and run dpkg-deb (xz at `xz_level`: 6 is ~2 min here, 1 is ~30 s and +10%)."""
    if shutil.which("dpkg-deb") is None:
        raise RuntimeError("dpkg-deb not found (apt-get install dpkg); use --skip-deb elsewhere")
    root = stage(inputs, staging)
    out_dir.mkdir(parents=True, exist_ok=True)
    deb = out_dir / f"{APP}_{inputs.version}_{debian_arch()}.deb"
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "-Zxz", f"-z{xz_level}", "--build", str(root), str(deb)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return deb


def _normalise_modes(root: Path) -> None:
    # The build tree may carry a restrictive umask; installed files must be world-readable.
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                continue
            executable = os.stat(path).st_mode & 0o111
            os.chmod(path, 0o755 if executable else 0o644)


def _size_kib(root: Path) -> int:
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    return (total + 1023) // 1024
