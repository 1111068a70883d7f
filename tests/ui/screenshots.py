"""Renders the main window with sample content, light and dark, to docs/screenshots/ (manual)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QSettings
from PySide6.QtWidgets import QApplication

from desktop.core.models import (
    ConnectionState,
    ConnectionStatus,
    DeliveryState,
    SessionSummary,
    ToolCall,
)
from desktop.ui.platform.tray import Tray
from desktop.ui.theme import ThemeManager, ThemeMode
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.main_window import MainWindow, ProfileEntry
from tests.ui.fakes import FakeBackend, approval, assistant, make_attachment, user

NOW = 1_700_000_000.0
REPLY = """Sure! Here is a small helper that retries with **full jitter**:

```python
import random

def backoff(attempt: int, cap: float = 30.0) -> float:
    return random.uniform(0, min(cap, 2 ** attempt))
```

It never waits longer than `cap` seconds. See [the AWS write-up](https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/)."""


def sample_backend() -> FakeBackend:
    b = FakeBackend(pid="embedded")
    b.summaries = [
        SessionSummary(
            "s1", "Retry with jitter", "It never waits longer than cap…", NOW - 40, 6, True, 0
        ),
        SessionSummary(
            "s2", "Trip to Lisbon", "Day 3: Sintra and Cabo da Roca", NOW - 3600 * 3, 12, False, 2
        ),
        SessionSummary(
            "s3",
            "SQLite WAL questions",
            "synchronous=FULL survives power loss",
            NOW - 86400 * 2,
            9,
            False,
            0,
        ),
        SessionSummary(
            "s4",
            "Birthday poem for Ana",
            "Roses are red, commits are green",
            NOW - 86400 * 9,
            4,
            False,
            0,
        ),
    ]
    thinking = assistant("a0", REPLY, thinking="The user wants a backoff helper…")
    thinking.tools = [ToolCall("t1", "python.run", "backoff(3)", "5.71", done=True)]
    b.messages["s1"] = [
        user("u0", "How should my client back off between reconnects?"),
        thinking,
        user("u1", "Nice. And what if the send fails?", DeliveryState.FAILED),
        user("u2", "Can you show a test for it too?", DeliveryState.PENDING),
    ]
    b.messages["s1"][2].delivery_error = "connection lost"
    b.messages["s1"][2].attachments = (make_attachment("trace.log", b"x"),)
    return b


def render(out: Path, mode: ThemeMode) -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    theme = ThemeManager(app, mode)
    backend = sample_backend()
    with tempfile.TemporaryDirectory() as tmp:
        settings = QSettings(str(Path(tmp) / "ui.ini"), QSettings.Format.IniFormat)
        win = MainWindow(
            [ProfileEntry("Embedded gateway", ProfileBridge(backend))],
            settings,
            tray=Tray(),
            wall=lambda: NOW,
        )
        win.set_colors(theme.colors)
        win.resize(1120, 760)
        win.show()
        win.open_session("s1")
        backend.set_status(
            ConnectionStatus(ConnectionState.ONLINE, 3, 7, last_connected_at=NOW - 120)
        )
        backend.emit("on_approval_request", "s1", approval())
        win.composer.set_running(True)
        for _ in range(30):
            QCoreApplication.processEvents()
        win.chat_view.chat_model.flush()
        for _ in range(30):
            QCoreApplication.processEvents()
        win.grab().save(str(out))
        win.close()
        win.deleteLater()
        QCoreApplication.processEvents()


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")
    target.mkdir(parents=True, exist_ok=True)
    render(target / "main-light.png", ThemeMode.LIGHT)
    render(target / "main-dark.png", ThemeMode.DARK)
