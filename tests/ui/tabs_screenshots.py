"""Screenshots of chat tabs of two profiles and the "running now" strip, for looking at.

Run on a real display, e.g. `xvfb-run -s "-screen 0 1280x800x24" python -m
tests.ui.tabs_screenshots /tmp/shots dark`.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from desktop.core.models import ConnectionState, ConnectionStatus, SessionSummary
from desktop.ui.platform.tray import Tray
from desktop.ui.theme import ThemeManager, ThemeMode
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.main_window import MainWindow, ProfileEntry
from tests.ui.fakes import FakeBackend, approval, assistant, user
from tests.ui.reading_screenshots import NOW, settle, shoot


def backends() -> tuple[FakeBackend, FakeBackend]:
    home = FakeBackend(pid="home")
    home.summaries = [
        SessionSummary("h1", "Durable queues", "WAL mode keeps readers going", NOW - 60, 12),
        SessionSummary("h2", "Trip to Lisbon", "Day 3: Sintra", NOW - 86400, 8, unread=2),
        SessionSummary("h3", "Clean up the build server", "", NOW - 30, 3, running=True),
    ]
    home.messages["h1"] = [
        user("u1", "Is WAL mode safe on a network drive?"),
        assistant("a1", "Not on most network file systems: WAL needs shared memory."),
    ]
    work = FakeBackend(pid="work")
    work.summaries = [
        SessionSummary("w1", "Release checklist for 2.1", "", NOW - 20, 6, running=True),
        SessionSummary("w2", "Quarterly numbers", "", NOW - 7200, 4),
    ]
    work.messages["w1"] = [user("u2", "Draft the release notes")]
    return home, work


def main(target: Path, mode: ThemeMode) -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    theme = ThemeManager(app, mode)
    home, work = backends()
    with tempfile.TemporaryDirectory() as tmp:
        settings = QSettings(str(Path(tmp) / "ui.ini"), QSettings.Format.IniFormat)
        entries = [
            ProfileEntry("This computer", ProfileBridge(home)),
            ProfileEntry("Work server", ProfileBridge(work)),
        ]
        win = MainWindow(entries, settings, tray=Tray(), wall=lambda: NOW)
        win.set_colors(theme.colors)
        win.resize(1040, 700)
        win.move(0, 0)
        win.show()
        for b in (home, work):
            b.set_status(ConnectionStatus(ConnectionState.ONLINE, 3, 7, last_connected_at=NOW))
        win.open_session("h2")
        win.tabs.open_in_tab("work", "w1")
        win.tabs.open_in_tab("home", "h3")
        win.tabs.open_in_tab("home", "h1")
        work.emit("on_approval_request", "w1", approval("r1"))
        settle()
        shoot(win, target / f"tabs-{mode.value}.png")
        win.popouts.open("work", "w1")
        [popped] = win.popouts.windows
        popped.move(300, 60)
        settle()
        shoot(popped, target / f"tabs-window-{mode.value}.png")  # type: ignore[arg-type]
        win.resize(560, 600)
        settle()
        shoot(win, target / f"tabs-narrow-{mode.value}.png")
        popped.close()
        win.resize(1040, 700)
        # h1, a draft typed in its tab, moves to a window of its own; a list search hit in it
        # is shown there.
        win.composer.edit.setPlainText("And on a local SSD, is it safe?")
        win.open_in_window("home", "h1")
        [moved] = win.popouts.windows
        moved.move(300, 60)
        win.search_box.setText("network")
        win.search_box.returnPressed.emit()
        settle()
        shoot(moved, target / f"tabs-moved-window-{mode.value}.png")  # type: ignore[arg-type]
        moved.hide()  # the main window under it: h1's tab gone, the draft with it
        settle()
        shoot(win, target / f"tabs-moved-main-{mode.value}.png")
        win.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), ThemeMode(sys.argv[2]))
