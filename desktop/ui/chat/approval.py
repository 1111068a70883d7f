"""Inline cards for what the agent waits on: approvals, questions, sudo and secret prompts.

Keyboard first: a new card takes focus (its first action, or its answer field), Tab moves
between its actions, Enter activates the focused one and Esc takes the card's way out (Deny
an approval, Skip a password or secret). Passwords and secrets are typed masked and the
field is cleared the moment the answer is sent.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop.ui.backend import ApprovalRequest

# approval choice -> (button label, accessible description)
CHOICE_LABELS = {
    "once": ("Allow once", "Run this command this one time"),
    "session": ("Allow this session", "Allow commands like this until the session ends"),
    "always": ("Always allow", "Allow commands like this from now on"),
    "deny": ("Deny", "Refuse this command"),
}
_HEADINGS = {
    "approval": "Approve this command?",
    "clarify": "The agent asks",
    "sudo": "Password needed",
    "secret": "Secret needed",
    "waiting": "Waiting for an answer",
}
# Sentinel answer of the "waiting" card's only button.
STOP = "stop"


class ApprovalCard(QFrame):
    """One pending request; answering it emits `answered` once and disables the card.

    Signals:
        answered(str, object): request id and the answer: the approval choice (once,
            session, always, deny), the clarify answer, the password/secret ("" skips), or
            "stop" for a turn waiting on a request this app cannot show.
    """

    answered = Signal(str, object)

    def __init__(self, request: ApprovalRequest, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("approvalCard")
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.request = request
        heading = _HEADINGS.get(request.kind, "The agent asks")
        self.setAccessibleName(f"{heading}: {request.title}")
        self.setAccessibleDescription(request.detail)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 10, 12, 10)
        kicker = QLabel(heading, self)
        kicker.setObjectName("approvalKicker")
        lay.addWidget(kicker)
        title = QLabel(self)
        title.setTextFormat(Qt.TextFormat.PlainText)
        title.setText(request.title)
        title.setWordWrap(True)
        title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        if request.kind == "approval":
            title.setObjectName("approvalCommand")
        lay.addWidget(title)
        if request.detail:
            detail = QLabel(self)
            detail.setTextFormat(Qt.TextFormat.PlainText)
            detail.setText(request.detail)
            detail.setWordWrap(True)
            detail.setAccessibleName("Request details")
            lay.addWidget(detail)
        row = QHBoxLayout()
        self.answer_edit: QLineEdit | None = None
        self.buttons: list[QPushButton] = []
        self._escape: object | None = None
        self._done = False
        self.answered_with_focus = False
        if request.kind == "approval":
            row.addStretch(1)
            for choice in request.choices or tuple(CHOICE_LABELS):
                label, description = CHOICE_LABELS.get(choice, (choice, choice))
                self._add(row, label, description, choice)
            self._escape = "deny"
        elif request.kind in ("sudo", "secret"):
            self.answer_edit = self._field(row, "Password" if request.kind == "sudo" else "Value")
            self.answer_edit.setEchoMode(QLineEdit.EchoMode.Password)
            self._add(row, "Send", "Send it to the agent; it is not stored here", None)
            self._add(row, "Skip", "Answer nothing", "")
            self._escape = ""
        elif request.kind == "waiting":
            row.addStretch(1)
            for label in request.choices or ("Stop the turn",):
                self._add(row, label, "Stop the turn so the agent stops waiting", STOP)
        else:
            for choice in request.choices:
                self._add(row, choice, f"Answer '{choice}'", choice)
            self.answer_edit = self._field(row, "Answer")
            self._add(row, "Answer", "Send this answer", None)
        lay.addLayout(row)

    def focus_first(self) -> None:
        """Keyboard focus to where the answer starts: the field, else the first action."""
        target: QWidget | None = self.answer_edit or (self.buttons[0] if self.buttons else None)
        (target or self).setFocus(Qt.FocusReason.OtherFocusReason)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Esc inside the card is the card's way out, not the window's Stop shortcut."""
        kind = event.type()
        if kind in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress) and (
            isinstance(event, QKeyEvent) and event.key() == Qt.Key.Key_Escape
        ):
            if self._escape is None or self._done:
                return False
            event.accept()
            if kind == QEvent.Type.KeyPress:
                self._answer(self._escape)
            return kind == QEvent.Type.KeyPress
        return super().eventFilter(watched, event)

    # -- building ------------------------------------------------------------------------------

    def _field(self, row: QHBoxLayout, name: str) -> QLineEdit:
        edit = QLineEdit(self)
        edit.setPlaceholderText(f"{name}…")
        edit.setAccessibleName(name)
        edit.returnPressed.connect(self._on_answer_edit_return_pressed)
        edit.installEventFilter(self)
        row.addWidget(edit, 3)
        return edit

    def _add(self, row: QHBoxLayout, text: str, description: str, value: object) -> QPushButton:
        b = QPushButton(text, self)
        b.setAccessibleName(text)
        b.setAccessibleDescription(description)
        b.setAutoDefault(True)  # Enter activates the focused button
        b.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        if value == "deny":
            b.setObjectName("denyButton")
        b.clicked.connect(lambda: self._answer(value))
        b.installEventFilter(self)
        row.addWidget(b)
        self.buttons.append(b)
        return b

    # -- answering -----------------------------------------------------------------------------

    def _answer(self, value: object) -> None:
        if self._done:
            return
        if value is None:
            value = self.answer_edit.text() if self.answer_edit is not None else ""
            if self.request.kind == "clarify":
                value = str(value).strip()
            if not value:
                return
        self._done = True
        focused = QApplication.focusWidget()
        # Read by the window to hand the keyboard back to the composer.
        self.answered_with_focus = focused is not None and self.isAncestorOf(focused)
        for b in self.buttons:
            b.setEnabled(False)
        if self.answer_edit is not None:
            if self.request.masked:
                self.answer_edit.clear()  # the secret leaves the widget with the answer
            self.answer_edit.setEnabled(False)
        self.answered.emit(self.request.request_id, value)

    def _on_answer_edit_return_pressed(self) -> None:
        self._answer(None)
