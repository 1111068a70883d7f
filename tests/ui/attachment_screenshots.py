"""Screenshots of sent attachments: an image thumbnail, file chips and a missing copy.

`QT_QPA_PLATFORM=offscreen python -m tests.ui.attachment_screenshots docs/screenshots`
writes attachments-light.png and attachments-dark.png.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QBuffer, QIODevice, QPointF, Qt
from PySide6.QtGui import QColor, QImage, QLinearGradient, QPainter
from PySide6.QtWidgets import QApplication

from desktop.core.disk.attachments import AttachmentStore
from desktop.core.models import Attachment, SessionSummary
from desktop.ui.theme import ThemeMode
from tests.ui.fakes import FakeBackend, assistant, user
from tests.ui.reading_screenshots import NOW, sample_window, settle


def chart_png(width: int = 640, height: int = 400) -> bytes:
    """A small bar chart as PNG bytes: something recognisable in a thumbnail."""
    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor("#ffffff"))
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    sky = QLinearGradient(QPointF(0, 0), QPointF(0, height))
    sky.setColorAt(0, QColor("#e8f0ff"))
    sky.setColorAt(1, QColor("#ffffff"))
    p.fillRect(image.rect(), sky)
    for i, value in enumerate([0.35, 0.6, 0.45, 0.8, 0.7, 0.95]):
        bar_h = value * (height - 80)
        p.fillRect(int(40 + i * 95), int(height - 40 - bar_h), 70, int(bar_h), QColor("#3b6fd8"))
    p.setPen(QColor("#1d2533"))
    f = p.font()
    f.setPointSize(22)
    p.setFont(f)
    p.drawText(image.rect().adjusted(0, 12, 0, 0), Qt.AlignmentFlag.AlignHCenter, "Q3 signups")
    p.end()
    buf = QBuffer()
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buf, "PNG")
    return bytes(buf.data().data())


def backend(files: AttachmentStore) -> FakeBackend:
    b = FakeBackend(pid="embedded")
    b.summaries = [SessionSummary("s1", "Signups report", "the chart", NOW - 60, 4)]
    chart = files.add(chart_png(), "signups-q3.png")
    notes = files.add(b"Q3 notes\n- signups up 18%\n", "meeting-notes.txt")
    gone = Attachment("0" * 64, "old-draft.pdf", "application/pdf", 48_213, "/nowhere/x")
    b.messages["s1"] = [
        user("u0", "Here is the chart from the dashboard, what stands out?"),
        assistant("a0", "Signups rise every month but one; **June** dips."),
        user("u1", "And these notes from the meeting, plus last year's draft."),
        assistant("a1", "The notes match the chart. I cannot see the PDF's content."),
    ]
    b.messages["s1"][0].attachments = (chart,)
    b.messages["s1"][2].attachments = (notes, gone)
    return b


def main(target: Path, mode: ThemeMode) -> None:
    QApplication.instance() or QApplication(sys.argv)
    with tempfile.TemporaryDirectory() as tmp:
        files = AttachmentStore(tmp)
        with sample_window(backend(files), mode) as win:
            settle()
            out = target / f"attachments-{mode.value}.png"
            win.grab().save(str(out))
            print("saved", out)


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")
    out.mkdir(parents=True, exist_ok=True)
    for m in (ThemeMode.LIGHT, ThemeMode.DARK):
        main(out, m)
