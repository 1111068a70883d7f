"""The follow-ups waiting behind a running reply, one row each above the composer: edit (back
into the composer), move up or down, steer the running reply now, or cancel."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from desktop.core.models import ChatMessage
from desktop.ui.render.wrap import ElidingLabel


def _one_line(text: str) -> str:
    return " ".join(text.split())


class QueuedRow(QFrame):
    """One queued follow-up: its text on one line and its actions.

    Signals:
        action(str, str): (kind, message id), kind one of edit, up, down, steer, cancel.
    """

    action = Signal(str, str)

    def __init__(self, message: ChatMessage, position: int, count: int, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("queuedRow")
        self.message_id = message.id
        line = _one_line(message.text) or "(attachments)"
        self.setAccessibleName(f"Queued message {position + 1} of {count}: {line}")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 2, 4, 2)
        lay.setSpacing(2)
        self.label = ElidingLabel(line, self)
        self.label.setObjectName("queuedText")
        self.label.set_tip(message.text)
        lay.addWidget(self.label, 1)
        self.buttons: dict[str, QToolButton] = {}
        for kind, text, what in (
            ("edit", "Edit", "Take it back into the composer to change it"),
            ("up", "↑", "Send it earlier"),
            ("down", "↓", "Send it later"),
            ("steer", "Steer now", "Put it into the running reply now instead of after it"),
            ("cancel", "✕", "Cancel it: it is not sent"),
        ):
            b = QToolButton(self)
            b.setText(text)
            b.setToolTip(what)
            names = {"up": "Move up", "down": "Move down", "cancel": "Cancel"}
            b.setAccessibleName(f"{names.get(kind, text)}: {line}")
            b.setAccessibleDescription(what)
            b.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
            b.clicked.connect(lambda _=False, k=kind: self.action.emit(k, self.message_id))
            lay.addWidget(b)
            self.buttons[kind] = b
        self.buttons["up"].setEnabled(position > 0)
        self.buttons["down"].setEnabled(position < count - 1)


class QueuedRows(QWidget):
    """The queued follow-ups of the open chat, in the order they will go out.

    Signals:
        action(str, str): (kind, message id) from one of its rows.
    """

    action = Signal(str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("queuedRows")
        self.setAccessibleName("Queued messages")
        self._steer = (True, "")
        self._lay = QVBoxLayout(self)
        self._lay.setContentsMargins(12, 4, 12, 0)
        self._lay.setSpacing(2)
        self.title = QLabel("", self)
        self.title.setObjectName("queuedTitle")
        self._lay.addWidget(self.title)
        self.rows: list[QueuedRow] = []
        self._shown: list[tuple[str, str]] | None = None  # (id, text) of each row as shown
        self._applied: tuple[bool, str] | None = None  # the Steer offer the rows show
        self._neighbours: tuple[QWidget, QWidget] | None = None
        self.hide()

    def set_focus_neighbours(self, before: QWidget, after: QWidget) -> None:
        """Tab reaches the rows' buttons between `before` and `after`."""
        self._neighbours = (before, after)

    def show_queued(self, messages: Sequence[ChatMessage]) -> None:
        """Show these follow-ups (none hides the rows); keyboard focus stays on the same
        message's same button where it still has one. The same follow-ups as shown keep
        their rows (nothing is rebuilt)."""
        shown = [(m.id, m.text) for m in messages]
        if shown == self._shown and self.isHidden() == (not messages):
            self._apply_steer()
            return
        self._shown = shown
        focused = self.focusWidget()
        keep = next(
            (
                (row.message_id, kind)
                for row in self.rows
                for kind, b in row.buttons.items()
                if b is focused
            ),
            None,
        )
        for row in self.rows:
            row.hide()
            row.deleteLater()
        self.rows = []
        self._applied = None  # new rows: the Steer offer is applied to them
        for i, message in enumerate(messages):
            row = QueuedRow(message, i, len(messages), self)
            row.action.connect(self.action)
            self._lay.addWidget(row)
            row.show()  # a child added to a shown widget is hidden until shown
            self.rows.append(row)
        n = len(messages)
        self.title.setText(f"Queued: {n} message{'s' if n != 1 else ''} to send after this reply")
        self._apply_steer()
        self.setVisible(bool(messages))
        if self._neighbours is not None:
            chain = [self._neighbours[0]]
            chain += [b for row in self.rows for b in row.buttons.values()]
            chain.append(self._neighbours[1])
            for a, b in pairwise(chain):
                QWidget.setTabOrder(a, b)
        if keep is not None:
            for row in self.rows:
                b = row.buttons[keep[1]]
                if row.message_id == keep[0] and b.isEnabled():
                    b.setFocus(Qt.FocusReason.OtherFocusReason)

    def set_steer(self, available: bool, reason: str) -> None:
        """Offer Steer now on each row, or hide it with `reason` in the rows' tooltip."""
        self._steer = (available, reason)
        self._apply_steer()

    def _apply_steer(self) -> None:
        available, reason = self._steer
        if self._applied == self._steer:
            return
        self._applied = self._steer
        for row in self.rows:
            row.buttons["steer"].setVisible(available)
            row.setToolTip("" if available else f"Steer is unavailable: {reason}")
