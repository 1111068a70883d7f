"""Finds the app's icons and themes: in the package (wheel, zip, frozen) or in a source checkout.

The source files are in the top-level resources/ folder; a wheel's build and the frozen build
put resources/icons and resources/themes into the package as desktop/resources, read here with
importlib.resources. A source checkout (or an editable install) has no desktop/resources and
reads resources/ beside desktop/ instead.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import tempfile
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from PySide6.QtCore import QByteArray, Qt
from PySide6.QtGui import QIcon, QImage, QPainter, QPixmap

# Package data of `desktop` (setup.py's build_py; the frozen build's datas).
_PACKAGE = "desktop"
_FOLDER = "resources"
# desktop/ui/platform/resources.py -> the checkout's top-level resources/.
_CHECKOUT = Path(__file__).resolve().parents[3] / "resources"
# Files extracted from a zip for APIs that need a real path; removed when the app exits.
_extracted = contextlib.ExitStack()
atexit.register(_extracted.close)


@cache
def resource_root() -> Traversable:
    """Where the icons and themes are: the installed package's, else the checkout's."""
    packaged = resources.files(_PACKAGE).joinpath(_FOLDER)
    # By a folder inside it: an empty desktop/resources left in an old checkout does not count.
    return packaged if packaged.joinpath("themes").is_dir() else _CHECKOUT


def resource(*parts: str) -> Traversable:
    """A bundled resource, wherever the package was loaded from."""
    node = resource_root()
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
_tinted_names = itertools.count()


@cache
def icon(name: str, tint: str = "") -> QIcon:
    """An SVG icon from resources/icons by bare name; scales crisply at any device pixel ratio.

    With `tint`, the neutral strokes are recoloured (line icons on a dark theme). Qt's own SVG
    icon engine draws either kind at the size asked for, when asked; so a recoloured copy is
    written into a folder of this run's (removed at exit), and drawn here at a few sizes only
    where no such file can be written.
    """
    if not tint:
        return QIcon(str(resource_path("icons", f"{name}.svg")))
    svg = read_resource_text("icons", f"{name}.svg").replace(NEUTRAL, tint)
    try:
        path = _tinted_folder() / f"{name}-{next(_tinted_names)}.svg"
        path.write_text(svg, encoding="utf-8")
    except OSError:
        return _drawn(svg)
    return QIcon(str(path))


@cache
def _tinted_folder() -> Path:
    return Path(_extracted.enter_context(tempfile.TemporaryDirectory(prefix="hermes-qt-icons-")))


def _drawn(svg: str) -> QIcon:
    """`svg` drawn at each of `_SIZES` (QtSvg's bindings, loaded here only)."""
    from PySide6.QtSvg import QSvgRenderer

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
