"""Inline cards for what the agent waits on: approvals, questions, sudo and secret prompts.

Keyboard first: a new card takes focus (its first action, or its answer field), Tab moves
between its actions, Enter activates the focused one and Esc takes the card's way out (Deny
an approval, Skip a password or secret). Passwords and secrets are typed masked and the
field is cleared the moment the answer is sent.

A clarify request with several questions (Hermes 0.22 asks up to five at once), or one whose
answer may pick several choices, is a form: per question its choices (radio buttons, or
check boxes when several may be picked) and a free-text field, then Send answers. Tab walks
through it, Space picks, Enter in a field or on Send sends the form.
"""

from __future__ import annotations

import json

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QButtonGroup,
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from desktop.ui.backend import ApprovalRequest, Question

# approval choice -> (button label, accessible description)
CHOICE_LABELS = {
    "once": ("Allow once", "Run this command this one time"),
    # Hermes approves this kind of command for the session (approve_session); its per-chat
    # auto-approve (yolo) stays as the header shows it.
    "session": (
        "Allow this session",
        "Allow commands like this one until the session ends (auto-approve stays as it is)",
    ),
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
# Sentinel value of a clarify form's Send: the answer is read from the whole form.
_FORM = object()


def _is_form(request: ApprovalRequest) -> bool:
    """Several questions, or one whose answer may pick several choices: shown as a form."""
    return len(request.questions) > 1 or any(q.multi_select for q in request.questions)


class ApprovalCard(QFrame):
    """One pending request; answering it emits `answered` once and disables the card.

    Signals:
        answered(str, object): request id and the answer: the approval choice (once,
            session, always, deny), the clarify answer (a form's: `{qid: text}`, several
            picks as a JSON list), the password/secret ("" skips), or "stop" for a turn
            waiting on a request this app cannot show.
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
        # A clarify form: per question its choice buttons and its free-text field.
        self._form: list[tuple[Question, list[QAbstractButton], QLineEdit]] = []
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
        elif request.kind == "clarify" and _is_form(request):
            for question in request.questions:
                self._question(lay, question)
            row.addStretch(1)
            self._add(row, "Send answers", "Send every answer to the agent", _FORM)
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
        first: QWidget | None = None
        if self._form:
            _, picks, edit = self._form[0]
            first = picks[0] if picks else edit
        target = first or self.answer_edit or (self.buttons[0] if self.buttons else None)
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

    def _question(self, lay: QVBoxLayout, question: Question) -> None:
        label = QLabel(self)
        label.setTextFormat(Qt.TextFormat.PlainText)
        label.setText(question.text)
        label.setWordWrap(True)
        label.setObjectName("clarifyQuestion")
        lay.addWidget(label)
        picks: list[QAbstractButton] = []
        # One choice: radio buttons, one Tab stop, arrows move, Space picks. Several: check
        # boxes, each its own Tab stop (a button group would make them one stop).
        group = QButtonGroup(self) if not question.multi_select else None
        for choice in question.choices:
            pick: QAbstractButton = (
                QCheckBox(choice, self) if question.multi_select else QRadioButton(choice, self)
            )
            pick.setAccessibleName(f"{question.text} {choice}")
            pick.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
            pick.installEventFilter(self)
            if group is not None:
                group.addButton(pick)
            lay.addWidget(pick)
            picks.append(pick)
        edit = QLineEdit(self)
        hint = "Or your own answer" if question.choices else "Your answer"
        edit.setPlaceholderText(f"{hint}…")
        edit.setAccessibleName(f"{question.text}: {hint.lower()}")
        edit.returnPressed.connect(lambda: self._answer(_FORM))
        edit.installEventFilter(self)
        lay.addWidget(edit)
        self._form.append((question, picks, edit))

    def _form_answers(self) -> dict[str, str]:
        """What the form says, per qid: a question left empty is left out (skipped)."""
        out: dict[str, str] = {}
        for question, picks, edit in self._form:
            typed = edit.text().strip()
            picked = [b.text() for b in picks if b.isChecked()]
            if question.multi_select:
                chosen = picked + ([typed] if typed else [])
                if chosen:
                    out[question.qid] = json.dumps(chosen, ensure_ascii=False)
            elif typed or picked:
                out[question.qid] = typed or picked[0]
        return out

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
        if value is _FORM:
            value = self._form_answers()
            if not value:
                return
        elif value is None:
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
        for _, picks, edit in self._form:
            for pick in picks:
                pick.setEnabled(False)
            edit.setEnabled(False)
        if self.answer_edit is not None:
            if self.request.masked:
                self.answer_edit.clear()  # the secret leaves the widget with the answer
            self.answer_edit.setEnabled(False)
        self.answered.emit(self.request.request_id, value)

    def _on_answer_edit_return_pressed(self) -> None:
        self._answer(None)
