"""Connection widget: the words for each state, and a countdown timer only while reconnecting."""

from __future__ import annotations

from typing import Any

import pytest

from desktop.core.models import ConnectionState, ConnectionStatus
from desktop.ui.backend import Diagnostics, ReconnectRecord
from desktop.ui.window.pane.details import DetailsDialog
from desktop.ui.window.pane.status_bar import ConnectionWidget


class FakeTime:
    def __init__(self) -> None:
        self.mono = 100.0
        self.wall = 1_700_000_000.0


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


@pytest.fixture
def widget(qtbot: Any, clock: FakeTime) -> ConnectionWidget:
    w = ConnectionWidget(monotonic=lambda: clock.mono, wall=lambda: clock.wall)
    qtbot.addWidget(w)
    w.show()
    return w


@pytest.mark.parametrize(
    ("status", "text"),
    [
        (ConnectionStatus(ConnectionState.ONLINE, 1, 1), "Online"),
        (ConnectionStatus(ConnectionState.CONNECTING, 1, 1), "Connecting…"),
        (
            ConnectionStatus(ConnectionState.RECONNECTING, 1, 1, retry_at=107.0),
            "Reconnecting in 7 s",
        ),
        (ConnectionStatus(ConnectionState.RECONNECTING, 1, 1), "Reconnecting…"),
        (ConnectionStatus(ConnectionState.CLOSED, 1, 1), "Offline"),
        (ConnectionStatus(ConnectionState.PAUSED, 1, 1), "Paused"),
        (
            ConnectionStatus(ConnectionState.FAILED, 1, 1, reason="auth refused"),
            "Failed: auth refused",
        ),
    ],
)
def test_label_for_each_state(
    widget: ConnectionWidget, status: ConnectionStatus, text: str
) -> None:
    widget.set_status(status)
    assert widget.label.text() == text


def test_countdown_ticks_and_stops_when_online(
    qtbot: Any, widget: ConnectionWidget, clock: FakeTime
) -> None:
    assert not widget.countdown_active, "no timer while idle"
    widget.set_status(
        ConnectionStatus(
            ConnectionState.RECONNECTING,
            2,
            3,
            retry_at=clock.mono + 7,
            last_connected_at=clock.wall - 300,
        )
    )
    assert widget.countdown_active
    assert widget.label.text() == "Reconnecting in 7 s"
    assert widget.since.text() == "last connected 5 min ago"
    clock.mono += 3
    qtbot.wait_until(lambda: widget.label.text() == "Reconnecting in 4 s", timeout=3000)
    widget.set_status(ConnectionStatus(ConnectionState.ONLINE, 2, 4))
    assert not widget.countdown_active
    assert widget.label.text() == "Online"
    assert not widget.since.isVisible()


def test_countdown_stops_itself_when_due(
    qtbot: Any, widget: ConnectionWidget, clock: FakeTime
) -> None:
    widget.set_status(ConnectionStatus(ConnectionState.RECONNECTING, 1, 1, retry_at=clock.mono + 1))
    clock.mono += 2
    qtbot.wait_until(lambda: not widget.countdown_active, timeout=3000)
    assert widget.label.text() == "Reconnecting…"


def test_buttons_follow_state(qtbot: Any, widget: ConnectionWidget) -> None:
    widget.set_status(ConnectionStatus(ConnectionState.PAUSED, 1, 1))
    assert widget.resume_button.isVisible() and not widget.pause_button.isVisible()
    with qtbot.wait_signal(widget.resume_requested):
        widget.resume_button.click()
    widget.set_status(ConnectionStatus(ConnectionState.FAILED, 1, 1, reason="x"))
    assert widget.reconnect_button.isVisible()
    with qtbot.wait_signal(widget.reconnect_requested):
        widget.reconnect_button.click()
    with qtbot.wait_signal(widget.pause_requested):
        widget.pause_button.click()
    widget.set_status(ConnectionStatus(ConnectionState.ONLINE, 1, 1))
    assert not widget.reconnect_button.isVisible()


def test_details_show_internals(qtbot: Any) -> None:
    d = DetailsDialog()
    qtbot.addWidget(d)
    d.show_diagnostics(
        Diagnostics(
            epoch=4,
            generation=9,
            dialect="current",
            last_inbound_age=2.5,
            heartbeat_rtts=(0.02, 0.03, 0.5),
            reconnects=(ReconnectRecord(1_700_000_000.0, "heartbeat deadline"),),
        )
    )
    assert d.epoch.text() == "4" and d.generation.text() == "9"
    assert d.inbound.text() == "2.5 s ago"
    assert d.sparkline.values == (0.02, 0.03, 0.5)
    assert d.rtt.text() == "last 500 ms, median 30 ms, worst 500 ms"
    assert "heartbeat deadline" in d.history.item(0).text()
    assert not d.sparkline.grab().isNull()


def test_details_say_what_there_is_none_of_yet(qtbot: Any) -> None:
    """One heartbeat so far: the chart said "no heartbeat data" beside its round trip in
    words; no reconnect yet: an empty box."""
    d = DetailsDialog()
    qtbot.addWidget(d)
    d.resize(400, 300)
    d.show_diagnostics(
        Diagnostics(
            epoch=1,
            generation=1,
            dialect="current",
            last_inbound_age=6.7,
            heartbeat_rtts=(0.002,),
            reconnects=(),
        )
    )
    assert d.rtt.text() == "last 2 ms, median 2 ms, worst 2 ms"
    image = d.sparkline.grab().toImage()
    blue = [
        y
        for x in range(image.width())
        for y in range(image.height())
        if image.pixelColor(x, y).blue() - image.pixelColor(x, y).red() > 80
    ]
    assert blue, "the one round trip is drawn (blue)"
    # As a level line through the middle: along the top edge it read as an underline.
    middle = image.height() / 2
    assert all(abs(y - middle) <= 2 for y in blue), (sorted(set(blue)), image.height())
    assert d.history.count() == 1 and d.history.item(0).text() == "None since the app started"


def test_a_click_on_retry_leaves_the_keyboard_where_it_was(qtbot: Any, clock: FakeTime) -> None:
    """Retry clicked while typing: once the link was back Retry hid and the keyboard fell to
    Pause (ringed), away from what the user was typing."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication, QHBoxLayout, QLineEdit, QWidget

    window = QWidget()
    qtbot.addWidget(window)
    row = QHBoxLayout(window)
    typing = QLineEdit(window)
    header = ConnectionWidget(window, monotonic=lambda: clock.mono, wall=lambda: clock.wall)
    row.addWidget(typing)
    row.addWidget(header)
    with qtbot.waitExposed(window):
        window.show()
    window.activateWindow()
    typing.setFocus()
    header.set_status(ConnectionStatus(ConnectionState.RECONNECTING, 1, 1, retry_at=107.0))
    with qtbot.wait_signal(header.reconnect_requested):
        QTest.mouseClick(header.reconnect_button, Qt.MouseButton.LeftButton)
    header.set_status(ConnectionStatus(ConnectionState.ONLINE, 2, 1))
    assert not header.reconnect_button.isVisible()
    assert typing.hasFocus(), f"the keyboard is on {QApplication.focusWidget()!r}"
    assert header.reconnect_button.focusPolicy() & Qt.FocusPolicy.TabFocus, "Tab reaches it"
