"""Helpers for the settings dialog tests: real Preferences on a temp dir, buttons by name."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QLabel, QWidget

from desktop.app.preferences import Preferences
from desktop.app.settings_checks import SettingsChecks
from desktop.core.link.profiles import FileTokenStore
from desktop.gateway.providers.config import KeyStore
from desktop.ui.settings.dialog import SettingsDialog
from tests.ui.e2e_support import until


@pytest.fixture
def keep_loop(qapp: Any) -> Any:
    """Closing the dialog must not quit the test's qasync loop (it is the only window)."""
    quit_on_close = qapp.quitOnLastWindowClosed()
    qapp.setQuitOnLastWindowClosed(False)
    yield
    qapp.setQuitOnLastWindowClosed(quit_on_close)


def make_prefs(root: Path, monkeypatch: pytest.MonkeyPatch) -> Preferences:
    # Provider keys go to the 0600 key file: the test keyring backend is the null one.
    monkeypatch.setattr(KeyStore, "default", classmethod(lambda cls, d: cls(d, None)))
    return Preferences(root, FileTokenStore(root / "tokens.json"))


def open_dialog(qtbot: Any, prefs: Preferences, root: Path) -> SettingsDialog:
    """The dialog as the app opens it: saved values, saving through Preferences, real checks."""
    dialog = SettingsDialog(prefs.load(), prefs.save, checks=SettingsChecks(prefs, root, root))
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.activateWindow()
    return dialog


def button(parent: QWidget, name: str) -> QAbstractButton:
    (found,) = [
        b
        for b in parent.findChildren(QAbstractButton)
        if b.accessibleName() == name and b.isVisibleTo(parent)
    ]
    return found


def click(qtbot: Any, parent: QWidget, name: str) -> None:
    qtbot.mouseClick(button(parent, name), Qt.MouseButton.LeftButton)


async def result_of(label: QLabel, timeout: float = 30.0) -> str:
    """Wait until a check's result line shows ✓ or ✗, and return it."""
    await until(lambda: label.text()[:1] in {"✓", "✗"}, "the check's result", timeout)
    return label.text()


def closed_port() -> int:
    """A loopback port nobody listens on (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
