"""What lies under the chat view's rows, painted by the view so that its viewport is opaque."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QPixmap, QRegion
from PySide6.QtWidgets import QAbstractItemView, QAbstractScrollArea, QScrollBar, QWidget

# The theme rounds the view's border (resources/themes/base.qss: border-radius 6px): its curve
# reaches this far into the viewport's corners.
CORNER = 6


class Backdrop:
    """The chat view's background: its colour, and at the viewport's four corners the frame's
    own pixels (the rounded border and its focus colour reach in there), taken from the frame
    once and kept until its look changes (`forget`).

    The viewport is opaque (WA_OpaquePaintEvent), so Qt no longer paints the window, the
    splitter, the pane and the frame under it before each of its paints: a reply streaming in
    repaints the viewport hundreds of times a second, and those paints were ~14 % of the UI
    thread's time. The pixels are those the theme painted behind a see-through viewport.
    """

    def __init__(self, frame: QAbstractScrollArea) -> None:
        self._frame = frame
        self._corners: list[tuple[QRect, QPixmap]] | None = None
        self._strip: tuple[QRect, QPixmap] | None = None  # the frame under the scroll bar
        frame.viewport().setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, True)
        bar = _OpaqueScrollBar(self, frame)
        frame.setVerticalScrollBar(bar)
        if isinstance(frame, QAbstractItemView):  # what the view hears of its first bar
            bar.actionTriggered.connect(frame.verticalScrollbarAction)
            bar.valueChanged.connect(frame.verticalScrollbarValueChanged)
        # The box Qt keeps the scroll bar in, which it fills: opaque too, or Qt paints what
        # is under the box whenever the bar changes.
        box = bar.parentWidget()
        if box is not None and box is not frame:
            box.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, True)

    def forget(self) -> None:
        """The frame's look changed (focus, size, theme): its pixels are taken again."""
        self._corners = None
        self._strip = None

    def under(self, widget: QWidget) -> QPixmap:
        """The frame's pixels under a child of it (its scroll bar, whose theme background is
        see-through), taken once for its place."""
        place = QRect(widget.mapTo(self._frame, QPoint(0, 0)), widget.size())
        if self._strip is None or self._strip[0] != place:
            self._strip = (place, self._taken(place))
        return self._strip[1]

    def paint(self, painter: QPainter, rect: QRect) -> None:
        """Paint the background of `rect` (viewport coordinates), before the rows."""
        viewport = self._frame.viewport()
        painter.fillRect(rect, viewport.palette().brush(viewport.backgroundRole()))
        if viewport.autoFillBackground():
            return  # (no theme: the viewport filled its own background over the frame)
        for at, pixels in self._frame_corners():
            if at.intersects(rect):
                painter.drawPixmap(at.topLeft(), pixels)

    def _frame_corners(self) -> list[tuple[QRect, QPixmap]]:
        if self._corners is None:
            viewport = self._frame.viewport()
            inner = viewport.rect()
            size = min(CORNER, inner.width() // 2, inner.height() // 2)
            squares = [
                QRect(inner.left(), inner.top(), size, size),
                QRect(inner.right() - size + 1, inner.top(), size, size),
                QRect(inner.left(), inner.bottom() - size + 1, size, size),
                QRect(inner.right() - size + 1, inner.bottom() - size + 1, size, size),
            ]
            offset = viewport.pos()
            self._corners = [(square, self._taken(square.translated(offset))) for square in squares]
        return self._corners

    def _taken(self, area: QRect) -> QPixmap:
        """The frame's own pixels in `area` (frame coordinates): its background and border,
        without the viewport over them."""
        dpr = self._frame.devicePixelRatioF()
        pixels = QPixmap(round(area.width() * dpr), round(area.height() * dpr))
        pixels.setDevicePixelRatio(dpr)
        pixels.fill(Qt.GlobalColor.transparent)
        self._frame.render(pixels, QPoint(), QRegion(area), QWidget.RenderFlag.DrawWindowBackground)
        return pixels


class _OpaqueScrollBar(QScrollBar):
    """The view's scroll bar, opaque: it paints the frame's pixels under it, then itself (its
    theme background is see-through). Its value follows a streaming reply line by line; were
    it see-through, each of those paints would repaint the window, the pane and the frame
    under it first.

    It is always there (one that came and went would change every row's width, and so its
    height), but draws its handle only when there is something to scroll: an empty or short
    chat showed a handle the whole height of the track."""

    def __init__(self, backdrop: Backdrop, parent: QWidget) -> None:
        super().__init__(Qt.Orientation.Vertical, parent)
        self._backdrop = backdrop
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, True)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.drawPixmap(0, 0, self._backdrop.under(self))
        painter.end()
        if self.maximum() > self.minimum():  # (a change of range repaints the bar)
            super().paintEvent(event)
