"""The connection details popover: epoch, generation, inbound age, heartbeat sparkline, history."""

from __future__ import annotations

import time

from PySide6.QtCore import QPointF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPaintEvent, QPen
from PySide6.QtWidgets import (
    QDialog,
    QFormLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.ui.backend import Diagnostics


class Sparkline(QWidget):
    """A tiny line chart of heartbeat round-trip times (seconds, oldest first)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.values: tuple[float, ...] = ()
        self.setAccessibleName("Heartbeat round-trip times")
        self.setMinimumHeight(36)

    def sizeHint(self) -> QSize:
        return QSize(220, 40)

    def set_values(self, values: tuple[float, ...]) -> None:
        """Replace the plotted values and repaint."""
        self.values = tuple(values[-60:])
        ms = [f"{v * 1000:.0f} ms" for v in self.values[-3:]]
        self.setAccessibleDescription("latest: " + ", ".join(ms) if ms else "no data")
        self.update()

    def paintEvent(self, _e: QPaintEvent) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        r = self.rect().adjusted(2, 4, -2, -4)
        if not self.values:
            p.setPen(self.palette().placeholderText().color())
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "no heartbeat yet")
            return
        # One round trip so far is a level line (it said "no heartbeat data" beside the
        # round trip's figure); a level line runs through the middle (along the top edge it
        # read as an underline of the row above).
        values = self.values if len(self.values) > 1 else self.values * 2
        top = max(values) or 1.0
        if min(values) == top:
            top *= 2
        step = r.width() / (len(values) - 1)
        path = QPainterPath()
        for i, v in enumerate(values):
            pt = QPointF(r.left() + i * step, r.bottom() - (v / top) * r.height())
            if i == 0:
                path.moveTo(pt)
            else:
                path.lineTo(pt)
        p.setPen(QPen(QColor("#2f7cf6"), 1.6))
        p.drawPath(path)


class DetailsDialog(QDialog):
    """A non-modal popover with a profile's connection internals."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Popup)
        self.setWindowTitle("Connection details")
        self.setAccessibleName("Connection details")
        self.epoch = QLabel(self)
        self.generation = QLabel(self)
        self.dialect = QLabel(self)
        self.inbound = QLabel(self)
        self.sparkline = Sparkline(self)
        self.rtt = QLabel(self)
        self.history = QListWidget(self)
        self.history.setAccessibleName("Reconnect history")
        self.history.setMaximumHeight(120)
        form = QFormLayout()
        for name, w in (
            ("Epoch", self.epoch),
            ("Socket generation", self.generation),
            ("Protocol", self.dialect),
            ("Last inbound frame", self.inbound),
            ("Heartbeat RTT", self.sparkline),
            ("Round trip", self.rtt),
        ):
            w.setAccessibleName(name)
            form.addRow(name, w)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(QLabel("Reconnects and close reasons", self))
        lay.addWidget(self.history)

    def show_diagnostics(self, d: Diagnostics) -> None:
        """Fill the popover from a snapshot."""
        self.epoch.setText(str(d.epoch))
        self.generation.setText(str(d.generation))
        self.dialect.setText(d.dialect or "unknown")
        age = d.last_inbound_age
        self.inbound.setText("never" if age is None else f"{age:.1f} s ago")
        self.sparkline.set_values(d.heartbeat_rtts)
        self.rtt.setText(_rtt_summary(d.heartbeat_rtts))
        self.history.clear()
        for rec in reversed(d.reconnects):
            stamp = time.strftime("%H:%M:%S", time.localtime(rec.at))
            self.history.addItem(f"{stamp}  {rec.reason}")
        if not d.reconnects:  # an empty box said nothing at all
            none = QListWidgetItem("None since the app started", self.history)
            none.setFlags(Qt.ItemFlag.NoItemFlags)


def _rtt_summary(samples: tuple[float, ...]) -> str:
    """The sparkline in words, for people who do not read charts (and screen readers)."""
    if not samples:
        return "no heartbeat yet"
    ordered = sorted(samples)
    last, median, worst = samples[-1], ordered[len(ordered) // 2], ordered[-1]
    return f"last {last * 1000:.0f} ms, median {median * 1000:.0f} ms, worst {worst * 1000:.0f} ms"
