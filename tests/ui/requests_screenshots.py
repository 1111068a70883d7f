"""Screenshot of the clarify card with several questions (Hermes 0.22's clarify form).

The real window with a scripted backend holding one pending request shaped as 0.22.2 sends
it (questions with choices, one multi-select, one open). Run e.g.
`QT_QPA_PLATFORM=offscreen python -m tests.ui.requests_screenshots docs/screenshots`.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication, QCheckBox, QRadioButton

from desktop.core.models import ApprovalRequest, Question
from desktop.ui.chat.approval import ApprovalCard
from desktop.ui.platform.tray import Tray
from desktop.ui.theme import ThemeManager, ThemeMode
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.main_window import MainWindow, ProfileEntry
from tests.ui.fakes import FakeBackend, assistant, user

FORM = ApprovalRequest(
    "srq-732e40ec49d2",
    "clarify",
    "The agent asks 3 questions",
    reply_to="srq-732e40ec49d2",
    questions=(
        Question("q0", "Which environment should I deploy to?", ("staging (Recommended)", "prod")),
        Question("q1", "Which regions?", ("eu-west", "us-east", "ap-south"), multi_select=True),
        Question("q2", "Anything I should know before I start?"),
    ),
)


def main(out: Path) -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    ThemeManager(app, ThemeMode.LIGHT)
    b = FakeBackend(pid="p1")
    b.messages = {
        "s1": [
            user("u1", "Deploy the new build"),
            assistant("a1", "Before I deploy, a few questions."),
        ]
    }
    with tempfile.TemporaryDirectory() as tmp:
        settings = QSettings(str(Path(tmp) / "ui.ini"), QSettings.Format.IniFormat)
        win = MainWindow([ProfileEntry("Hermes 0.22", ProfileBridge(b))], settings, tray=Tray())
        win.resize(1040, 820)
        win.show()
        win.activateWindow()
        win.open_session("s1")
        b.emit("on_approval_request", "s1", FORM)
        [card] = win.approvals.findChildren(ApprovalCard)
        card.findChildren(QRadioButton)[1].setChecked(True)
        boxes = card.findChildren(QCheckBox)
        boxes[0].setChecked(True)
        boxes[2].setChecked(True)
        for _ in range(20):
            app.processEvents()
        win.chat_view.chat_model.flush()
        app.processEvents()
        win.grab().save(str(out / "agent-clarify-form.png"))
        win.close()


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots"))
