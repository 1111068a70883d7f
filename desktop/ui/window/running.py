"""What each chat is doing, as tabs and the "running now" strip show it, and the strip itself:
every chat of every profile with a turn running or a question waiting, one click to it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QWidget

from desktop.core.models import SessionSummary
from desktop.ui.backend import ChatBackend
from desktop.ui.render.markdown import title_text

STRIP_MAX = 6  # buttons shown; the rest are counted ("and 3 more")


@dataclass(frozen=True, slots=True)
class ChatState:
    """One chat as a tab or the strip shows it."""

    profile_id: str
    key: str
    title: str
    profile: str  # the profile's name
    running: bool = False
    waiting: int = 0  # questions (approval, clarify) not answered yet
    unread: int = 0

    @property
    def busy(self) -> bool:
        """Whether it belongs on the "running now" strip."""
        return self.running or self.waiting > 0

    def what(self) -> str:
        """Its state in words ("" when idle and read), for tooltips and screen readers."""
        parts = []
        if self.waiting:
            parts.append("a question waiting" if self.waiting == 1 else f"{self.waiting} questions")
        if self.running:
            parts.append("reply running")
        if self.unread:
            parts.append(f"{self.unread} unread")
        return ", ".join(parts)


def chat_state(
    backend: ChatBackend,
    profile: str,
    key: str,
    summary: SessionSummary | None = None,
    waiting: int | None = None,
) -> ChatState:
    """What chat `key` of `backend` is doing now (`summary` and `waiting`: already known)."""
    summary = summary or backend.summary(key)
    title = title_text(summary.title) if summary and summary.title else "New chat"
    return ChatState(
        backend.profile_id,
        key,
        " ".join(title.split()) or "New chat",
        profile,
        running=bool(summary and summary.running),
        waiting=len(backend.pending_requests(key)) if waiting is None else waiting,
        unread=summary.unread if summary else 0,
    )


def busy_chats(backend: ChatBackend, profile: str) -> list[ChatState]:
    """The chats of `backend` with a turn running or a question waiting, in list order.

    Only those are made into states: a title's markdown parsed for each of 10,000 idle chats
    took 1.2 s, at every start and every refresh of the tabs."""
    return [chat_state(backend, profile, key) for key in backend.busy_keys()]


NO_ICON = QIcon()
_DOTS: dict[str, QIcon] = {}  # colour -> its dot, made once: tabs compare icons by cache key


def state_icon(state: ChatState, accent: str, warning: str) -> QIcon:
    """A dot: the warning colour while a question waits, the accent while a reply runs (the
    same QIcon for the same colour each time)."""
    if not state.busy:
        return NO_ICON
    color = warning if state.waiting else accent
    dot = _DOTS.get(color)
    if dot is None:
        pixmap = QPixmap(QSize(10, 10))
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(color))
        painter.drawEllipse(1, 1, 8, 8)
        painter.end()
        dot = _DOTS[color] = QIcon(pixmap)
    return dot


class RunningStrip(QWidget):
    """A row of buttons over the chat, one per busy chat; hidden while no chat is busy.

    Signals:
        chosen(str, str): profile id and session key of the chat clicked.
    """

    chosen = Signal(str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("runningStrip")
        self.setAccessibleName("Running now")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self._shown: tuple[ChatState, ...] = ()
        self._colors = ("#3b82f6", "#d97706")
        self._lay = QHBoxLayout(self)
        self._lay.setContentsMargins(12, 3, 12, 3)
        self._lay.setSpacing(4)
        self.label = QLabel("Running now", self)
        self.label.setObjectName("runningLabel")
        self.label.setMinimumWidth(1)
        self.more_label = QLabel("", self)
        self.more_label.setObjectName("runningMore")
        self.more_label.hide()
        self._lay.addWidget(self.label)
        self._lay.addWidget(self.more_label)
        self._lay.addStretch(1)
        self._pool: list[QToolButton] = []  # made as needed, at most STRIP_MAX, then relabelled
        self.buttons: list[QToolButton] = []  # those shown, in order
        self.hide()

    def set_colors(self, accent: str, warning: str) -> None:
        self._colors = (accent, warning)
        shown, self._shown = self._shown, ()
        self.show_chats(shown)

    def show_chats(self, states: Iterable[ChatState]) -> None:
        """List `states` (only when they changed). Its buttons are made once and relabelled:
        with many chats streaming the busy set changes at nearly every turn's start or end,
        and making the buttons anew each time (widgets, layout) took milliseconds a frame."""
        states = tuple(states)
        if states == self._shown:
            return
        self._shown = states
        shown = states[:STRIP_MAX]
        while len(self._pool) < len(shown):
            self._pool.append(self._button(len(self._pool)))
        for button, state in zip(self._pool, shown, strict=False):
            self._label(button, state)
        for i, button in enumerate(self._pool):
            button.setVisible(i < len(shown))
        self.buttons = self._pool[: len(shown)]
        rest = len(states) - STRIP_MAX
        self.more_label.setText(f"and {rest} more" if rest > 0 else "")
        self.more_label.setVisible(rest > 0)
        self.setVisible(bool(states))

    def _button(self, place: int) -> QToolButton:
        button = QToolButton(self)
        button.setObjectName("runningChat")
        button.setAutoRaise(True)
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        button.setIconSize(QSize(10, 10))
        button.setMinimumWidth(48)  # narrow windows squeeze the titles (never the chat)
        button.clicked.connect(lambda: self._chosen(place))
        self._lay.insertWidget(1 + place, button)  # after the label, before "and 3 more"
        return button

    def _label(self, button: QToolButton, state: ChatState) -> None:
        title = state.title if len(state.title) <= 28 else state.title[:27] + "…"
        button.setText(title.replace("&", "&&"))
        button.setIcon(state_icon(state, *self._colors))
        tip = f"{state.title} ({state.profile}): {state.what()}. Click to open it"
        button.setToolTip(tip)
        button.setAccessibleName(f"{state.title}, {state.profile}")
        button.setAccessibleDescription(f"{state.what()}; opens it")

    def _chosen(self, place: int) -> None:
        if place < len(self._shown):
            state = self._shown[place]
            self.chosen.emit(state.profile_id, state.key)
