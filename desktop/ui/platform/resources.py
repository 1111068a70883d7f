"""Finds bundled resources (icons, themes) with importlib.resources: wheel, zip and frozen alike."""

from __future__ import annotations

import atexit
import contextlib
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from PySide6.QtCore import QByteArray, Qt
from PySide6.QtGui import QIcon, QImage, QPainter, QPixmap
from PySide6.QtSvg import QSvgRenderer

# Package data of `desktop` (pyproject.toml's package-data; the frozen build's datas).
_PACKAGE = "desktop"
_FOLDER = "resources"
# Files extracted from a zip for APIs that need a real path; removed when the app exits.
_extracted = contextlib.ExitStack()
atexit.register(_extracted.close)


def resource(*parts: str) -> Traversable:
    """A bundled resource, wherever the package was loaded from."""
    node = resources.files(_PACKAGE).joinpath(_FOLDER)
    for part in parts:
        node = node.joinpath(part)
    return node


def read_resource_text(*parts: str) -> str:
    """The text of a bundled resource file (a theme's QSS, an SVG)."""
    return resource(*parts).read_text(encoding="utf-8")


@cache
def resource_path(*parts: str) -> Path:
    """A file-system path of a bundled resource for Qt APIs that load by name (QIcon).

    The file itself in a wheel or the frozen build; a copy kept until exit when loaded from a zip.
    """
    return _extracted.enter_context(resources.as_file(resource(*parts)))


# The neutral stroke colour the bundled line icons are drawn with; `tint` replaces it.
NEUTRAL = "#5b6472"
_SIZES = (16, 20, 24, 32, 40, 48, 64, 96)


@cache
def icon(name: str, tint: str = "") -> QIcon:
    """An SVG icon from resources/icons by bare name; scales crisply at any device pixel ratio.

    With `tint`, the neutral strokes are recoloured (line icons on a dark theme).
    """
    if not tint:
        return QIcon(str(resource_path("icons", f"{name}.svg")))
    svg = read_resource_text("icons", f"{name}.svg").replace(NEUTRAL, tint)
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
