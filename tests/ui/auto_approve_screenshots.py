"""Screenshots of the chat header with auto-approve on and a reply's turn duration, light
and dark (manual).

QT_QPA_PLATFORM=offscreen .venv/bin/python -m tests.ui.auto_approve_screenshots
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from desktop.core.models import SessionInfo
from desktop.ui.platform.tray import Tray
from desktop.ui.theme import ThemeManager, ThemeMode
from desktop.ui.window.bridge import ProfileBridge, ProfileEntry
from desktop.ui.window.main_window import MainWindow
from tests.ui.fakes import FakeBackend, assistant, user

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
INFO = SessionInfo(
    model="fake-model",
    provider="custom",
    context_percent=62,
    context_used=81_300,
    context_max=131_072,
    auto_approve=True,
)


def main() -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    theme = ThemeManager(app, ThemeMode.LIGHT)
    b = FakeBackend(pid="p1")
    b.messages = {
        "s1": [
            user("u1", "Make the scratch file shared"),
            assistant("a1", "Done: `chmod 777 scratch.txt` ran without asking."),
        ]
    }
    reply = b.messages["s1"][1]
    reply.usage = {"input": 15_700, "output": 42, "model": "fake-model"}
    reply.duration = 75.0  # the footer's "took 1 min 15 s"
    with tempfile.TemporaryDirectory() as tmp:
        settings = QSettings(str(Path(tmp) / "ui.ini"), QSettings.Format.IniFormat)
        win = MainWindow([ProfileEntry("Hermes", ProfileBridge(b))], settings, tray=Tray())
        win.resize(1280, 520)
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
            assert win.header.auto_approve.text() == "Auto-approve on"
            path = OUT / f"auto-approve-{name}.png"
            win.grab().save(str(path))
            print("saved", path)
        win.close()


if __name__ == "__main__":
    main()
