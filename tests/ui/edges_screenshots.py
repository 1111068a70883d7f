"""Screenshots of issue #27's rough edges, fixed: header at 683/500 px and while reconnecting,
F1, Ctrl+K, rename, focus.

Run: QT_QPA_PLATFORM=offscreen python -m tests.ui.edges_screenshots  (writes docs/screenshots/)
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QSettings, Qt
from PySide6.QtWidgets import QApplication, QWidget

from desktop.core.models import ConnectionState, ConnectionStatus, SessionInfo
from desktop.ui.platform.tray import Tray
from desktop.ui.shortcuts import ShortcutsDialog
from desktop.ui.theme import ThemeManager, ThemeMode
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.chat_admin import text_dialog
from desktop.ui.window.main_window import MainWindow, ProfileEntry
from tests.ui.window.test_rough_edges import _backend

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def _settle() -> None:
    for _ in range(5):
        QCoreApplication.processEvents()


def _save(widget: QWidget, name: str) -> None:
    _settle()
    widget.grab().save(str(OUT / f"{name}.png"))


def main() -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    theme = ThemeManager(app, ThemeMode.LIGHT)
    tmp = tempfile.mkdtemp()
    for mode in (ThemeMode.LIGHT, ThemeMode.DARK):
        theme.set_mode(mode)
        tag = mode.value
        settings = QSettings(str(Path(tmp) / f"{tag}.ini"), QSettings.Format.IniFormat)
        backend = _backend()
        win = MainWindow([ProfileEntry("P1", ProfileBridge(backend))], settings, tray=Tray())
        win.set_colors(theme.colors)
        win.show()
        win.open_session("s1")
        for width in (683, 500):
            win.resize(width, 420)
            _save(win, f"edges-header-{width}-{tag}")
        # The window's first size, a Hermes chat's header, the link down: the list keeps its width.
        win.resize(1040, 300)
        info = SessionInfo(model="fake-model", provider="custom", context_percent=2)
        backend.emit("on_session_info", "s1", replace(info, auto_approve=False))
        now = time.time()
        down = ConnectionStatus(
            ConnectionState.RECONNECTING, 1, 1, retry_at=time.monotonic() + 9, last_connected_at=now
        )
        backend.emit("on_status", down)
        _save(win, f"edges-header-reconnecting-{tag}")
        up = ConnectionStatus(ConnectionState.ONLINE, 1, 2, last_connected_at=now)
        backend.emit("on_status", up)
        win.resize(900, 560)
        win.session_list.setFocus(Qt.FocusReason.TabFocusReason)
        _save(win, f"edges-focus-list-{tag}")
        win.composer.edit.setPlainText("x")
        win.composer.send_button.setFocus(Qt.FocusReason.TabFocusReason)
        _save(win.pane, f"edges-focus-send-{tag}")
        dialog = ShortcutsDialog(win)
        dialog.show()
        _save(dialog, f"edges-f1-{tag}")
        dialog.close()
        win.switcher.popup()
        _save(win.switcher, f"edges-switcher-{tag}")
        win.switcher.hide()
        title = "Planning the kitchen renovation: tiles, grout colours and the budget"
        rename = text_dialog(win, "Rename chat", "Title:", title)
        rename.show()
        _save(rename, f"edges-rename-{tag}")
        rename.close()
        win.close()


if __name__ == "__main__":
    main()
