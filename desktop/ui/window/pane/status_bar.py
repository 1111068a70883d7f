"""The connection area: a plain status label with a countdown, one-click actions and details."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QWidget

from desktop.core.models import ConnectionState, ConnectionStatus
from desktop.ui.platform.resources import icon
from desktop.ui.render.wrap import ElidingLabel

_DOT = {
    ConnectionState.ONLINE: "status-online",
    ConnectionState.CONNECTING: "status-reconnecting",
    ConnectionState.RECONNECTING: "status-reconnecting",
    ConnectionState.PAUSED: "status-paused",
    ConnectionState.FAILED: "status-failed",
    ConnectionState.CLOSED: "status-offline",
}


# The state's words are never cut up to this long (a failure's reason may be cut after it).
_LONGEST_STATE = "Reconnecting in 30 s"


def status_text(status: ConnectionStatus, now: float) -> str:
    """The words the status label shows for a state at monotonic time `now`."""
    state = status.state
    if state is ConnectionState.ONLINE:
        return "Online"
    if state is ConnectionState.CONNECTING:
        return "Connecting…"
    if state is ConnectionState.RECONNECTING:
        if status.retry_at is None:
            return "Reconnecting…"
        left = max(0, round(status.retry_at - now))
        return f"Reconnecting in {left} s" if left > 0 else "Reconnecting…"
    if state is ConnectionState.PAUSED:
        return "Paused"
    if state is ConnectionState.FAILED:
        return f"Failed: {status.reason}" if status.reason else "Failed"
    return "Offline"


def since_text(wall: float | None, now_wall: float) -> str:
    """'last connected 5 min ago' style text for the last successful connect (beside a state
    that is not Online: cut short, "last conn…" still reads as the past)."""
    if wall is None:
        return "never connected"
    age = max(0.0, now_wall - wall)
    if age < 60:
        return "last connected just now"
    if age < 3600:
        return f"last connected {int(age // 60)} min ago"
    if age < 86400:
        return f"last connected {int(age // 3600)} h ago"
    return "last connected " + time.strftime("%Y-%m-%d %H:%M", time.localtime(wall))


class ConnectionWidget(QWidget):
    """Shows a profile's connection state; the 1 s countdown timer runs only while reconnecting.

    Signals:
        reconnect_requested(): Retry clicked (connect right now).
        pause_requested(): Pause clicked.
        resume_requested(): Resume clicked.
        details_requested(): the user wants the details popover.
    """

    reconnect_requested = Signal()
    pause_requested = Signal()
    resume_requested = Signal()
    details_requested = Signal()

    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("connectionWidget")
        self._monotonic = monotonic
        self._wall = wall
        self._status = ConnectionStatus(ConnectionState.CLOSED, 0, 0)
        self.dot = QLabel(self)
        self.dot.setAccessibleName("Connection state indicator")
        self.label = ElidingLabel("", self)
        self.label.setAccessibleName("Connection state")
        # While the link is down the header gains this and Retry, and must not push the
        # chat list aside for them: this gives way first (to nothing), the state's words never
        # (up to the longest countdown).
        self.since = ElidingLabel("", self, few=0)
        self.since.setAccessibleName("Last connected")
        self.since.setStyleSheet("color: palette(placeholder-text);")
        # "Retry" beside "Reconnecting in 7 s" (short: the header while the link is down is full).
        self.reconnect_button = self._button("Retry", "Try to connect right now")
        self.pause_button = self._button("Pause", "Disconnect on purpose until resumed")
        self.resume_button = self._button("Resume", "Connect again after a pause")
        self.details_button = self._button("Details", "Connection details and history")
        self.reconnect_button.clicked.connect(self.reconnect_requested)
        self.pause_button.clicked.connect(self.pause_requested)
        self.resume_button.clicked.connect(self.resume_requested)
        self.details_button.clicked.connect(self.details_requested)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(8)
        lay.addWidget(self.dot)
        lay.addWidget(self.label)
        lay.addWidget(self.since)
        lay.addStretch(1)
        for b in (self.reconnect_button, self.pause_button, self.resume_button):
            lay.addWidget(b)
        lay.addWidget(self.details_button)
        self._countdown = QTimer(self)
        self._countdown.setInterval(1000)
        self._countdown.timeout.connect(self._on_countdown_timeout)
        self.set_status(self._status)

    def _button(self, text: str, description: str) -> QPushButton:
        b = QPushButton(text, self)
        b.setAccessibleName(text)
        b.setAccessibleDescription(description)
        b.setCursor(Qt.CursorShape.PointingHandCursor)
        # Tab reaches it; a click leaves the keyboard where it was (typing in the composer):
        # Retry hides once the link is back, and the focus fell to Pause, ringed.
        b.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        # Never narrower than its text: a narrow window is wider at least than the header
        # needs, rather than showing "ause" and "etail".
        b.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        return b

    @property
    def countdown_active(self) -> bool:
        """Whether the 1 s countdown timer is running."""
        return self._countdown.isActive()

    @property
    def status(self) -> ConnectionStatus:
        return self._status

    def set_status(self, status: ConnectionStatus) -> None:
        """Show a new state; starts or stops the countdown timer."""
        self._status = status
        state = status.state
        self.dot.setPixmap(icon(_DOT[state]).pixmap(QSize(12, 12), self.devicePixelRatioF()))
        self.reconnect_button.setVisible(
            state in (ConnectionState.RECONNECTING, ConnectionState.FAILED, ConnectionState.CLOSED)
        )
        self.pause_button.setVisible(state is not ConnectionState.PAUSED)
        self.resume_button.setVisible(state is ConnectionState.PAUSED)
        if state is ConnectionState.RECONNECTING and status.retry_at is not None:
            if not self._countdown.isActive():
                self._countdown.start()
        else:
            self._countdown.stop()
        self._refresh()

    def _refresh(self) -> None:
        text = status_text(self._status, self._monotonic())
        self.label.setText(text)
        metrics = QFontMetricsF(self.label.font())  # fractional: a rounded width cuts "…"
        whole = min(metrics.horizontalAdvance(text), metrics.horizontalAdvance(_LONGEST_STATE))
        self.label.setMinimumWidth(math.ceil(whole) + 1)
        self.label.setAccessibleDescription(text)
        online = self._status.state is ConnectionState.ONLINE
        self.since.setText(
            "" if online else since_text(self._status.last_connected_at, self._wall())
        )
        self.since.setVisible(not online)

    def _on_countdown_timeout(self) -> None:
        self._refresh()
        retry_at = self._status.retry_at
        if retry_at is not None and retry_at - self._monotonic() <= 0:
            # Nothing left to count: idle until the next status arrives.
            self._countdown.stop()
