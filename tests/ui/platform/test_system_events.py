"""OS notices reach the supervisor: a wake from sleep or a network change reconnects at once."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from desktop.ui.platform.system_events import SystemEvents


def test_waking_from_sleep_is_forwarded_but_going_to_sleep_is_not(qtbot: Any) -> None:
    events = SystemEvents()
    with qtbot.assert_not_emitted(events.woke_up):
        events.on_prepare_for_sleep(True)
    with qtbot.wait_signal(events.woke_up, timeout=1000):
        events.on_prepare_for_sleep(False)


def test_a_reachability_change_is_forwarded_once(qtbot: Any) -> None:
    events = SystemEvents()
    events.on_network_reachability_changed("online")
    with qtbot.wait_signal(events.network_changed, timeout=1000):
        events.on_network_reachability_changed("disconnected")
    with qtbot.assert_not_emitted(events.network_changed):
        events.on_network_reachability_changed("disconnected")


def test_system_events_load_no_qtdbus() -> None:
    """logind's notices come through jeepney (desktop/app/sleep_watch.py): QtDBus, its
    libraries and its connection thread (~1.1 MB) are not loaded."""
    probe = (
        "import sys\n"
        "from PySide6.QtWidgets import QApplication\n"
        "from desktop.ui.platform.system_events import SystemEvents\n"
        "app = QApplication([])\n"
        "events = SystemEvents(app, watch_network=False)\n"
        "print('QTDBUS', 'PySide6.QtDBus' in sys.modules)\n"
    )
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    assert "QTDBUS False" in out.stdout
