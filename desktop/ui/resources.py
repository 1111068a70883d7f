"""Locates bundled resources (icons, themes) in the source tree or a PyInstaller bundle."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

from PySide6.QtCore import QByteArray, Qt
from PySide6.QtGui import QIcon, QImage, QPainter, QPixmap
from PySide6.QtSvg import QSvgRenderer


def resource_root() -> Path:
    """The `resources/` directory: next to the package, or inside a frozen bundle."""
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        return Path(bundle) / "resources"
    return Path(__file__).resolve().parents[2] / "resources"


def resource_path(*parts: str) -> Path:
    """Absolute path of a bundled resource file."""
    return resource_root().joinpath(*parts)


# The neutral stroke colour the bundled line icons are drawn with; `tint` replaces it.
NEUTRAL = "#5b6472"
_SIZES = (16, 20, 24, 32, 40, 48, 64, 96)


@cache
def icon(name: str, tint: str = "") -> QIcon:
    """An SVG icon from resources/icons by bare name; scales crisply at any device pixel ratio.

    With `tint`, the neutral strokes are recoloured (line icons on a dark theme).
    """
    path = resource_path("icons", f"{name}.svg")
    if not tint:
        return QIcon(str(path))
    svg = path.read_text(encoding="utf-8").replace(NEUTRAL, tint)
    renderer = QSvgRenderer(QByteArray(svg.encode("utf-8")))
    result = QIcon()
    for size in _SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        renderer.render(painter)
        painter.end()
        result.addPixmap(QPixmap.fromImage(image))
    return result
