"""Recoloured line icons: drawn by Qt's own SVG icon engine at the size asked for, when asked,
from a copy written for this run (removed at exit); drawn up front where none can be written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QColor, QIcon, QImage

from desktop.ui.platform import resources
from desktop.ui.platform.resources import icon
from tests.support.fresh_python import run_python

TINT = "#d04a02"


def _inked(image: QImage) -> list[QColor]:
    """The colours of the pixels drawn at least half opaque."""
    out = []
    for y in range(image.height()):
        for x in range(image.width()):
            color = image.pixelColor(x, y)
            if color.alpha() > 128:
                out.append(color)
    return out


def _in_tint(image: QImage) -> bool:
    ink = _inked(image)
    tint = QColor(TINT)
    close = [c for c in ink if max(abs(c.red() - tint.red()), abs(c.green() - tint.green())) < 40]
    return bool(ink) and len(close) >= 0.9 * len(ink)


@pytest.fixture
def fresh_icons() -> Any:
    icon.cache_clear()
    yield
    icon.cache_clear()


def test_a_recoloured_icon_is_drawn_in_its_tint_at_any_size(qapp: Any, fresh_icons: Any) -> None:
    tinted = icon("attach", TINT)
    # 13, 18, 27 were scaled from a size drawn up front; 128 (64 at twice the pixel ratio) was
    # no bigger than the largest drawn, 96.
    for size in (13, 16, 18, 27, 64, 128):
        pixmap = tinted.pixmap(QSize(size, size))
        assert pixmap.size() == QSize(size, size), size
        assert _in_tint(pixmap.toImage()), size
    # A disabled button's icon: the same shape, greyed by the style.
    disabled = tinted.pixmap(QSize(24, 24), QIcon.Mode.Disabled).toImage()
    assert _inked(disabled) and not _in_tint(disabled)


def test_where_no_copy_can_be_written_it_is_drawn_up_front_in_its_tint(
    qapp: Any, fresh_icons: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unwritable() -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(resources, "_tinted_folder", unwritable)
    tinted = icon("attach", TINT)
    assert _in_tint(tinted.pixmap(QSize(24, 24)).toImage())
    assert _in_tint(tinted.pixmap(QSize(64, 64)).toImage())


def test_the_copies_go_when_the_app_exits_and_qtsvg_is_never_loaded() -> None:
    code = """
        import sys
        from PySide6.QtWidgets import QApplication
        app = QApplication([])
        from desktop.ui.platform.resources import icon, _tinted_folder
        assert not icon("attach", "#aab3c2").pixmap(24, 24).isNull()
        import json
        print(json.dumps([str(_tinted_folder()), "PySide6.QtSvg" in sys.modules]))
    """
    folder, svg_loaded = run_python(code)
    assert svg_loaded is False  # QtSvg's bindings: about 0.4 MB resident, not needed
    assert not Path(folder).exists()
