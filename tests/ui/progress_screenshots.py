"""Screenshot of Hermes 0.22's progress in the window: context use in the header, the agent's
task list and its interim commentary above the composer while a turn runs.

The real window with a scripted backend whose session info is what `session.usage`,
`todo.updated` and `message.interim` leave on a conversation. Run e.g.
`QT_QPA_PLATFORM=offscreen python -m tests.ui.progress_screenshots docs/screenshots`.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from desktop.core.models import SessionInfo, TodoItem
from desktop.ui.platform.tray import Tray
from desktop.ui.theme import ThemeManager, ThemeMode
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.main_window import MainWindow, ProfileEntry
from tests.ui.fakes import FakeBackend, assistant, user

INFO = SessionInfo(
    model="fake-model",
    provider="custom",
    activity="Let me read the parser before I change it.",
    context_percent=42,
    context_used=55_000,
    context_max=131_072,
    running=True,
    todos=(
        TodoItem("Read the config", "completed"),
        TodoItem("Fix the parser", "in_progress"),
        TodoItem("Run the tests"),
        TodoItem("Write the changelog"),
        TodoItem("Tag the release"),
    ),
)


def main(out: Path) -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    ThemeManager(app, ThemeMode.LIGHT)
    b = FakeBackend(pid="p1")
    b.messages = {
        "s1": [
            user("u1", "Fix the date parser and cut a release"),
            assistant("a1", "On it: I made a plan and started with the config."),
        ]
    }
    with tempfile.TemporaryDirectory() as tmp:
        settings = QSettings(str(Path(tmp) / "ui.ini"), QSettings.Format.IniFormat)
        win = MainWindow([ProfileEntry("Hermes 0.22", ProfileBridge(b))], settings, tray=Tray())
        win.resize(1040, 720)
        win.show()
        win.activateWindow()
        win.open_session("s1")
        b.emit("on_session_info", "s1", INFO)
        for _ in range(20):
            app.processEvents()
        win.chat_view.chat_model.flush()
        app.processEvents()
        assert win.context_label.text() == "context 42 %"
        assert win.todo_list.heading.text() == "Tasks · 1 of 5 done"
        win.grab().save(str(out / "agent-progress.png"))
        win.close()


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots"))
