"""The real window on a real X display, for test_dialog_focus: prints "ready" once it shows
with the message box focused, and "shortcut fired: TEXT" (TEXT: what the message box holds)
when F1's shortcut runs, then quits."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication

from desktop.core.models import SessionSummary
from desktop.ui.platform.tray import Tray
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.main_window import MainWindow, ProfileEntry
from tests.ui.fakes import FakeBackend, assistant, user


def main() -> int:
    app = QApplication(sys.argv)
    backend = FakeBackend(pid="p1")
    backend.summaries = [SessionSummary("s1", "Kitchen tiles", "tiles", 3.0, 2)]
    backend.messages = {"s1": [user("u1", "which tiles?"), assistant("a1", "Terracotta.")]}
    folder = tempfile.mkdtemp()
    settings = QSettings(str(Path(folder) / "ui.ini"), QSettings.Format.IniFormat)
    Tray.available = classmethod(lambda cls: False)  # type: ignore[method-assign,assignment]
    win = MainWindow([ProfileEntry("P1", ProfileBridge(backend))], settings, tray=Tray())

    def fired() -> None:
        print(f"shortcut fired: {win.composer.edit.toPlainText()}", flush=True)
        app.quit()

    win.show_shortcuts = fired  # type: ignore[method-assign]
    win.actions_by_name["shortcuts"].triggered.disconnect()
    win.actions_by_name["shortcuts"].triggered.connect(fired)
    win.resize(900, 600)
    win.show()
    win.open_session("s1")
    win.composer.edit.setFocus()
    QTimer.singleShot(500, lambda: print("ready", flush=True))
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
