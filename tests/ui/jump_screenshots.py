"""Screenshots of the "jump to newest" button over a chat read far up, for the README.

Run on a real display, e.g. `xvfb-run -s "-screen 0 1280x800x24" python -m
tests.ui.jump_screenshots docs/screenshots dark`.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from desktop.core.models import ConnectionState, ConnectionStatus, SessionSummary
from desktop.ui.main_window import MainWindow, ProfileEntry
from desktop.ui.theme import ThemeManager, ThemeMode
from tests.ui.fakes import FakeBackend, assistant, user
from tests.ui.reading_screenshots import NOW, settle, shoot

TOPICS = ["WAL mode", "checkpoints", "fsync", "page size", "vacuum", "busy timeouts"]


def backend() -> FakeBackend:
    b = FakeBackend(pid="embedded")
    b.summaries = [
        SessionSummary("s1", "Durable queues", "a long chat", NOW - 60, 120),
        SessionSummary("s2", "Trip to Lisbon", "Day 3: Sintra", NOW - 86400 * 3, 12),
    ]
    rows = []
    for i in range(60):
        topic = TOPICS[i % len(TOPICS)]
        rows.append(user(f"u{i}", f"What about {topic} (question {i + 1})?"))
        rows.append(
            assistant(
                f"a{i}",
                f"For **{topic}**: keep the defaults unless a benchmark on the target disk "
                "says otherwise. Measure before and after, with the real workload.",
            )
        )
    b.messages["s1"] = rows
    return b


def main(target: Path, mode: ThemeMode) -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    theme = ThemeManager(app, mode)
    b = backend()
    with tempfile.TemporaryDirectory() as tmp:
        settings = QSettings(str(Path(tmp) / "ui.ini"), QSettings.Format.IniFormat)
        win = MainWindow([ProfileEntry("This computer", b)], settings, wall=lambda: NOW)
        win.set_colors(theme.colors)
        win.resize(1040, 700)
        win.move(0, 0)
        win.show()
        b.set_status(ConnectionStatus(ConnectionState.ONLINE, 3, 7, last_connected_at=NOW - 120))
        win.open_session("s1")
        settle()
        view = win.chat_view
        bar = view.verticalScrollBar()
        bar.setValue(bar.maximum() - 4 * view.viewport().height())
        settle()
        # Two replies arrive while the user reads far up: the button counts them.
        view.update_message(user("u-new", "And the checkpoint interval?"))
        view.update_message(assistant("a-new", "Every 1,000 pages by default."))
        view.update_message(assistant("a-new2", "Raise it only for write bursts."))
        shoot(win, target / f"jump-newest-{mode.value}.png")
        win.close()


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")
    out.mkdir(parents=True, exist_ok=True)
    main(out, ThemeMode(sys.argv[2]) if len(sys.argv) > 2 else ThemeMode.LIGHT)
