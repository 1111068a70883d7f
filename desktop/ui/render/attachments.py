"""A sent message's attachments in its bubble: image thumbnails and file chips (size, paint)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QGuiApplication,
    QIcon,
    QImage,
    QPainter,
    QPainterPath,
    QPen,
    QPixmap,
)

from desktop.core.disk.attachments import is_image, stored_bytes, stored_copy_ok
from desktop.core.models import Attachment
from desktop.ui.theme import Colors

# A thumbnail fits this box (logical pixels), its aspect ratio kept.
THUMB_W = 240.0
THUMB_H = 180.0
CHIP_PAD = 8.0
GAP = 4.0
# Decoded thumbnails kept (by content hash): a long chat scrolled back and forth decodes each
# image once, not at every layout or paint.
CACHE = 64
MISSING = "file missing"


@dataclass(frozen=True, slots=True)
class Preview:
    """What a bubble shows of one attachment: its thumbnail (images), or that it is gone."""

    pixmap: QPixmap | None
    missing: bool


class Previews:
    """Thumbnails and presence checks by content hash, each worked out once (bounded LRU).

    `decoded` counts image decodes, so a test can tell a cached paint from a fresh one. One per
    chat view, owned by its render cache (`BubbleDocs.previews`).
    """

    def __init__(self, size: int = CACHE) -> None:
        self._size = size
        self._items: OrderedDict[str, Preview] = OrderedDict()
        self.decoded = 0

    def get(self, att: Attachment) -> Preview:
        key = f"{att.sha256}|{att.path}"
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
            return found
        found = self._load(att)
        self._items[key] = found
        while len(self._items) > self._size:
            self._items.popitem(last=False)
        return found

    def forget(self) -> None:
        """Look again (e.g. a missing copy may be back)."""
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def _load(self, att: Attachment) -> Preview:
        if not is_image(att):
            return Preview(None, not stored_copy_ok(att))
        data = stored_bytes(att)
        image = QImage.fromData(data) if data is not None else QImage()
        if image.isNull():
            return Preview(None, True)  # gone, changed on disk, or not decodable
        self.decoded += 1
        dpr = _device_ratio()
        box = QSize(round(THUMB_W * dpr), round(THUMB_H * dpr))
        if image.width() > box.width() or image.height() > box.height():
            image = image.scaled(
                box, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation
            )
        pixmap = QPixmap.fromImage(image)
        pixmap.setDevicePixelRatio(dpr)
        return Preview(pixmap, False)


def _device_ratio() -> float:
    app = QGuiApplication.instance()
    screen = QGuiApplication.primaryScreen() if app is not None else None
    return float(screen.devicePixelRatio()) if screen is not None else 1.0


def chip_label(att: Attachment, preview: Preview) -> str:
    size = _size(att.size)
    return f"{att.filename} · {MISSING}" if preview.missing else f"{att.filename} · {size}"


def attachment_size(
    att: Attachment, preview: Preview, font: QFont, max_w: float
) -> tuple[float, float]:
    """The (width, height) of one attachment in a bubble whose content is at most `max_w`."""
    if preview.pixmap is not None:
        logical = preview.pixmap.deviceIndependentSize()
        scale = min(1.0, max_w / max(1.0, logical.width()))
        return logical.width() * scale, logical.height() * scale
    fm = QFontMetricsF(font)
    width = fm.horizontalAdvance(chip_label(att, preview)) + 2 * CHIP_PAD + 20
    return min(max_w, width), fm.lineSpacing() + 2 * CHIP_PAD - 4


def estimated_height(att: Attachment, line_spacing: float) -> float:
    """A height guess without decoding: images take the thumbnail box."""
    return (THUMB_H if is_image(att) else line_spacing + 2 * CHIP_PAD - 4) + GAP


def paint_attachment(
    painter: QPainter,
    att: Attachment,
    rect: QRectF,
    colors: Colors,
    *,
    preview: Preview,
    on_accent: bool,
    attach_icon: QIcon | None = None,
) -> None:
    """Draw one attachment in `rect`: a thumbnail with a thin frame, or a rounded file chip."""
    painter.save()
    if preview.pixmap is not None:
        clip = QPainterPath()
        clip.addRoundedRect(rect, 6, 6)
        painter.setClipPath(clip)
        painter.drawPixmap(rect, preview.pixmap, QRectF(preview.pixmap.rect()))
        painter.setClipping(False)
        painter.setPen(QPen(QColor(255, 255, 255, 90) if on_accent else QColor(colors.card_border)))
        painter.drawPath(clip)
        painter.restore()
        return
    fg = QColor("#ffffff") if on_accent else QColor(colors.text)
    bg = QColor(255, 255, 255, 40) if on_accent else QColor(colors.code_bg)
    chip = QPainterPath()
    chip.addRoundedRect(rect, 8, 8)
    painter.fillPath(chip, bg)
    painter.setPen(QPen(QColor(255, 255, 255, 110) if on_accent else QColor(colors.card_border)))
    painter.drawPath(chip)
    side = min(16.0, rect.height() - 4)
    icon_rect = QRectF(rect.left() + CHIP_PAD, rect.center().y() - side / 2, side, side)
    if attach_icon is not None:
        attach_icon.paint(painter, icon_rect.toRect())
    text_rect = rect.adjusted(CHIP_PAD + side + 4, 0, -CHIP_PAD, 0)
    label = QFontMetricsF(painter.font()).elidedText(
        chip_label(att, preview), Qt.TextElideMode.ElideMiddle, text_rect.width()
    )
    if preview.missing:
        fg.setAlphaF(0.75)
    painter.setPen(fg)
    painter.drawText(text_rect, Qt.AlignmentFlag.AlignVCenter, label)
    painter.restore()


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.0f} KB" if n < 1024 * 1024 else f"{n / (1024 * 1024):.1f} MB"
