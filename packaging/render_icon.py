"""Renders the app's SVG icon to PNG, ICO or ICNS (by the output's suffix) with QSvgRenderer."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def render(svg: Path, out: Path, size: int) -> None:
    """Draw `svg` into a transparent `size`x`size` image and save it; raises on failure."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication([])
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise ValueError(f"not a valid SVG: {svg}")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter)
    painter.end()
    out.parent.mkdir(parents=True, exist_ok=True)
    if not image.save(str(out)):
        raise OSError(f"Qt could not write {out} (is the image format plugin present?)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("svg", type=Path)
    parser.add_argument("out", type=Path, help="file to write; .png, .ico or .icns")
    parser.add_argument("--size", type=int, default=256)
    args = parser.parse_args(argv)
    try:
        render(args.svg, args.out, args.size)
    except (OSError, ValueError) as exc:
        print(f"render_icon: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
