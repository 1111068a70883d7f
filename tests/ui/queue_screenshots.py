"""Screenshots of follow-ups queued behind a running reply (rows above the composer, Steer now
and Stop and send beside the text being typed), light and dark (manual).

QT_QPA_PLATFORM=offscreen .venv/bin/python -m tests.ui.queue_screenshots
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from desktop.core.delivery.outbox import HELD
from desktop.core.models import DeliveryState
from desktop.ui.platform.tray import Tray
from desktop.ui.theme import ThemeManager, ThemeMode
from desktop.ui.window.bridge import ProfileBridge, ProfileEntry
from desktop.ui.window.main_window import MainWindow
from tests.ui.fakes import FakeBackend, assistant, user

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def main() -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    theme = ThemeManager(app, ThemeMode.LIGHT)
    b = FakeBackend(pid="p1")
    queued = []
    for i, text in enumerate(("Then add tests for the parser", "And update the changelog")):
        m = user(f"out:{i}", text, DeliveryState.PENDING)
        m.delivery_error = HELD
        queued.append(m)
    b.messages = {
        "s1": [
            user("u1", "Refactor the config loader"),
            assistant("a1", "Reading `config.py` and its callers…", streaming=True),
            *queued,
        ]
    }
    b.queued_rows = {"s1": queued}
    with tempfile.TemporaryDirectory() as tmp:
        settings = QSettings(str(Path(tmp) / "ui.ini"), QSettings.Format.IniFormat)
        win = MainWindow([ProfileEntry("Hermes", ProfileBridge(b))], settings, tray=Tray())
        win.resize(1040, 620)
        theme.theme_changed.connect(win.set_colors)
        win.show()
        win.open_session("s1")
        b.emit("on_running", "s1", True)
        win.composer.edit.setPlainText("Use the new TOML reader instead")
        for mode, name in ((ThemeMode.LIGHT, "light"), (ThemeMode.DARK, "dark")):
            theme.set_mode(mode)
            for _ in range(20):
                app.processEvents()
            win.chat_view.chat_model.flush()
            app.processEvents()
            assert len(win.queued_rows.rows) == 2 and win.composer.steer_button.isVisible()
            path = OUT / f"queued-follow-ups-{name}.png"
            win.grab().save(str(path))
            print("saved", path)
        win.close()


if __name__ == "__main__":
    main()
