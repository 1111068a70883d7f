"""Screenshots of Settings > General with the keep-awake setting, light and dark (manual).

QT_QPA_PLATFORM=offscreen .venv/bin/python -m tests.ui.keep_awake_screenshots
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtWidgets import QApplication

from desktop.app.preferences import Preferences
from desktop.core.link.profiles import FileTokenStore
from desktop.ui.settings.dialog import SettingsDialog
from desktop.ui.theme import ThemeManager, ThemeMode

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def run() -> int:
    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    theme = ThemeManager(app, ThemeMode.LIGHT)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        prefs = Preferences(root, FileTokenStore(root / "tokens.json"))
        dialog = SettingsDialog(prefs.load(), prefs.save)
        dialog.resize(720, 420)
        dialog.tabs.setCurrentIndex(dialog.tabs.count() - 1)
        for mode, name in ((ThemeMode.LIGHT, "light"), (ThemeMode.DARK, "dark")):
            theme.set_mode(mode)
            dialog.show()
            dialog.keep_awake.setFocus()
            app.processEvents()
            path = OUT / f"settings-keep-awake-{name}.png"
            dialog.grab().save(str(path))
            print("saved", path)
        dialog.close()
    return 0


if __name__ == "__main__":
    sys.exit(run())
