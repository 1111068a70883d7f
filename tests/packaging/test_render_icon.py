"""The menu and installer icons are rendered from the app's SVG, not left blank."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.packaging.modules import PACKAGING, RESOURCES


def _render(out: Path, size: int) -> subprocess.CompletedProcess[str]:
    # A separate process: the renderer makes its own QGuiApplication.
    svg = RESOURCES / "icons/app.svg"
    return subprocess.run(
        [
            sys.executable,
            str(PACKAGING / "render_icon.py"),
            str(svg),
            str(out),
            "--size",
            str(size),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
        timeout=60,
        check=False,
    )


def test_png_has_the_requested_size_and_the_icon_drawn(tmp_path: Path, qapp: Any) -> None:
    from PySide6.QtGui import QImage

    out = tmp_path / "icon.png"
    proc = _render(out, 256)
    assert proc.returncode == 0, proc.stderr
    image = QImage(str(out))
    assert (image.width(), image.height()) == (256, 256)
    assert image.hasAlphaChannel()
    assert image.pixelColor(0, 0).alpha() == 0  # rounded corner stays transparent
    edge = image.pixelColor(40, 128)  # inside the blue tile
    assert edge.alpha() == 255 and edge.blue() > edge.red()


@pytest.mark.parametrize("suffix", [".ico", ".icns"])
def test_native_icon_formats_for_windows_and_macos(tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"icon{suffix}"
    proc = _render(out, 256)
    assert proc.returncode == 0, proc.stderr
    magic = out.read_bytes()[:4]
    assert magic == (b"\0\0\1\0" if suffix == ".ico" else b"icns")


def test_a_broken_svg_is_an_error_not_a_blank_icon(tmp_path: Path) -> None:
    bad = tmp_path / "bad.svg"
    bad.write_text("<svg")
    proc = subprocess.run(
        [sys.executable, str(PACKAGING / "render_icon.py"), str(bad), str(tmp_path / "o.png")],
        capture_output=True,
        text=True,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert "not a valid SVG" in proc.stderr
    assert not (tmp_path / "o.png").exists()
