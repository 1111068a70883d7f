"""UI test fixtures: a temp QSettings, the scripted backend, and a shown main window."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings

from desktop.ui.platform.tray import Tray
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.main_window import MainWindow, ProfileEntry
from tests.ui.fakes import FakeBackend


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The offscreen platform plugin warns on every top-level show(); it is not our warning.
    for item in items:
        if item.path.is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.qt_log_ignore("does not support propagateSizeHints"))


@pytest.fixture
def settings(tmp_path: Path) -> QSettings:
    return QSettings(str(tmp_path / "ui.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend(pid="p1")


@pytest.fixture(autouse=True)
def _no_real_tray(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Tray, "available", classmethod(lambda cls: False))


@pytest.fixture
def make_window(qtbot: Any, settings: QSettings) -> Iterator[Any]:
    made: list[MainWindow] = []

    def make(*backends: FakeBackend) -> MainWindow:
        entries = [ProfileEntry(b.pid.upper(), ProfileBridge(b)) for b in backends]
        win = MainWindow(entries, settings, tray=Tray())
        qtbot.addWidget(win)
        win.resize(900, 600)
        with qtbot.waitExposed(win):
            win.show()
        made.append(win)
        return win

    yield make
    for win in made:
        win.chat_view.chat_model.flush()
