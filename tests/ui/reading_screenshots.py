"""Screenshots of reading and finding (selection, message menu, table, search), for the README.

Run on a real display, e.g. `xvfb-run -s "-screen 0 1280x800x24" python -m
tests.ui.reading_screenshots docs/screenshots`: the menu is a real popup, so the screen is grabbed.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QElapsedTimer, QPoint, QPointF, QSettings, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from desktop.core.models import ConnectionState, ConnectionStatus, SessionSummary
from desktop.ui.platform.tray import Tray
from desktop.ui.theme import ThemeManager, ThemeMode
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.main_window import MainWindow, ProfileEntry
from tests.ui.fakes import FakeBackend, assistant, user

NOW = 1_700_000_000.0
TABLE = """Here is how the three options compare:

| option | latency | survives a reboot |
|---|---:|:---:|
| in-memory queue | 0.1 ms | no |
| SQLite, `synchronous=NORMAL` | 0.4 ms | ~~mostly~~ yes, in WAL |
| SQLite, `synchronous=FULL` | 2.1 ms | yes |

- [x] pick WAL mode
- [ ] benchmark on the target disk

Details: https://www.sqlite.org/wal.html"""
REPLY = (
    "A quokka is a small wallaby from Rottnest Island. It is famous for looking as if it "
    "smiles, which is just the shape of its face.\n\nThey are **nocturnal** and eat grasses."
)


def backend() -> FakeBackend:
    b = FakeBackend(pid="embedded")
    b.summaries = [
        SessionSummary("s1", "Durable queues", "SQLite, synchronous=FULL", NOW - 60, 2),
        SessionSummary("s2", "Animals of Australia", "quokkas", NOW - 3600 * 5, 4),
        SessionSummary("s3", "Trip to Lisbon", "Day 3: Sintra", NOW - 86400 * 3, 12),
    ]
    b.messages["s1"] = [
        user("u1", "Which queue should the outbox use?"),
        assistant("a1", TABLE),
    ]
    b.messages["s2"] = [
        user("u2", "Tell me about quokkas"),
        assistant("a2", REPLY),
        user("u3", "Are they endangered?"),
        assistant("a3", "They are listed as *vulnerable*; the quokka population is stable."),
    ]
    return b


def settle(ms: int = 300) -> None:
    timer = QElapsedTimer()
    timer.start()
    while timer.elapsed() < ms:
        QCoreApplication.processEvents()


def shoot(win: MainWindow, out: Path) -> None:
    settle()
    screen = QGuiApplication.primaryScreen()
    geo = win.frameGeometry()
    screen.grabWindow(0, geo.x(), geo.y(), geo.width(), geo.height()).save(str(out))
    print("saved", out)


def point_of(win: MainWindow, row: int, pos: int) -> QPoint:
    view = win.chat_view
    index = view.chat_model.index(row)
    doc, at = view.bubbles.layout_for(index).text_docs()[0]
    block = doc.findBlock(pos)
    layout = block.layout()
    line = layout.lineForTextPosition(pos - block.position())
    x = line.cursorToX(pos - block.position())
    x = x[0] if isinstance(x, tuple) else x
    p = layout.position() + QPointF(x + 1, line.y() + line.height() / 2) + at
    return (p + QPointF(view.visualRect(index).topLeft())).toPoint()


@contextmanager
def sample_window(b: FakeBackend, mode: ThemeMode) -> Iterator[MainWindow]:
    """The main window on `b`, themed, online, chat "s1" open and settled; closed after."""
    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    theme = ThemeManager(app, mode)
    with tempfile.TemporaryDirectory() as tmp:
        settings = QSettings(str(Path(tmp) / "ui.ini"), QSettings.Format.IniFormat)
        win = MainWindow(
            [ProfileEntry("This computer", ProfileBridge(b))],
            settings,
            tray=Tray(),
            wall=lambda: NOW,
        )
        win.set_colors(theme.colors)
        win.resize(1040, 700)
        win.move(0, 0)
        win.show()
        b.set_status(ConnectionStatus(ConnectionState.ONLINE, 3, 7, last_connected_at=NOW - 120))
        win.open_session("s1")
        settle()
        try:
            yield win
        finally:
            win.close()


def main(target: Path, mode: ThemeMode = ThemeMode.LIGHT) -> None:
    with sample_window(backend(), mode) as win:
        shoot(win, target / "reading-table.png")

        win.open_session("s2")
        settle()
        view = win.chat_view
        vp = view.viewport()
        start, end = point_of(win, 1, 2), point_of(win, 1, 48)
        left, none = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
        QTest.mousePress(vp, left, none, start)
        QTest.mouseMove(vp, end)
        QTest.mouseRelease(vp, left, none, end)
        shoot(win, target / "reading-selection.png")

        menu = view.message_menu(1)
        menu.popup(vp.mapToGlobal(end + QPoint(8, 8)))
        shoot(win, target / "reading-menu.png")
        menu.close()

        view.clear_selection()
        QTest.keyClicks(win.search_box, "quokka")
        QTest.keyClick(win.search_box, Qt.Key.Key_Return)
        settle()
        shoot(win, target / "search-highlight.png")


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")
    out.mkdir(parents=True, exist_ok=True)
    main(out, ThemeMode(sys.argv[2]) if len(sys.argv) > 2 else ThemeMode.LIGHT)
