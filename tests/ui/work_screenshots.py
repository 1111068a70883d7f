"""Screenshots of the agent's work above the composer while a reply runs: two subagents (one
running with its live line and Stop, one done with its answer), a background process with Stop,
and the task list as a checklist. The real window with a scripted backend whose session info is
what Hermes' `subagent.*` events, `process.list` and the todo tool leave on a conversation.
Run `QT_QPA_PLATFORM=offscreen python -m tests.ui.work_screenshots` (writes docs/screenshots)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from desktop.core.models import BackgroundProcess, SessionInfo, Subagent, TodoItem
from desktop.ui.platform.tray import Tray
from desktop.ui.theme import ThemeManager, ThemeMode
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.main_window import MainWindow, ProfileEntry
from tests.ui.fakes import FakeBackend, assistant, user

OUT = Path("docs/screenshots")
INFO = SessionInfo(
    model="fake-model",
    provider="custom",
    activity="Waiting for the helpers…",
    context_percent=31,
    running=True,
    subagents=(
        Subagent(
            "sa-0-2309f8ca",
            "Find every caller of parse_date",
            status="completed",
            summary="Seven callers, all in src/io.",
            duration=12.4,
            tools=("search_files: parse_date",),
        ),
        Subagent(
            "sa-1-a71b",
            "Run the date tests on Python 3.11",
            text="terminal: pytest tests/test_dates.py -q",
            tools=("terminal: pytest tests/test_dates.py -q",),
        ),
    ),
    processes=(
        BackgroundProcess(
            "proc_7141004c9ec5",
            "python -m http.server 8000",
            pid=10859,
            uptime=95,
            output="Serving HTTP on 0.0.0.0 port 8000 ...\n",
        ),
    ),
    todos=(
        TodoItem("Find the callers", "completed"),
        TodoItem("Fix the parser", "in_progress"),
        TodoItem("Run the tests"),
        TodoItem("Write the changelog"),
    ),
)


def main() -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    theme = ThemeManager(app, ThemeMode.LIGHT)
    b = FakeBackend(pid="p1")
    b.messages = {
        "s1": [
            user("u1", "Fix the date parser; have helpers find the callers and run the tests"),
            assistant("a1", "Two helpers are on it; I started a preview server meanwhile."),
        ]
    }
    with tempfile.TemporaryDirectory() as tmp:
        settings = QSettings(str(Path(tmp) / "ui.ini"), QSettings.Format.IniFormat)
        win = MainWindow([ProfileEntry("Hermes", ProfileBridge(b))], settings, tray=Tray())
        win.resize(1040, 720)
        theme.theme_changed.connect(win.set_colors)
        win.show()
        win.open_session("s1")
        b.emit("on_session_info", "s1", INFO)
        for mode, name in ((ThemeMode.LIGHT, "light"), (ThemeMode.DARK, "dark")):
            theme.set_mode(mode)
            for _ in range(20):
                app.processEvents()
            win.chat_view.chat_model.flush()
            app.processEvents()
            assert win.work_panel.isVisible() and win.todo_list.isVisible()
            path = OUT / f"agent-work-{name}.png"
            win.grab().save(str(path))
            print("saved", path)
        win.close()


if __name__ == "__main__":
    main()
