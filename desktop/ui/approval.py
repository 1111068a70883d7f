"""Inline cards for approval.request (approve/deny) and clarify.request (a text answer)."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop.ui.backend import ApprovalRequest


class ApprovalCard(QFrame):
    """One pending request; answering it emits `answered` once and disables the card.

    Signals:
        answered(str, object): request id and the answer (bool for approval, str for clarify).
    """

    answered = Signal(str, object)

    def __init__(self, request: ApprovalRequest, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("approvalCard")
        self.request = request
        self.setAccessibleName(
            f"{'Approval' if request.kind == 'approval' else 'Question'}: {request.title}"
        )
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 10, 12, 10)
        title = QLabel(f"<b>{_esc(request.title)}</b>", self)
        title.setWordWrap(True)
        lay.addWidget(title)
        if request.detail:
            detail = QLabel(request.detail, self)
            detail.setWordWrap(True)
            detail.setAccessibleName("Request details")
            lay.addWidget(detail)
        row = QHBoxLayout()
        row.addStretch(1)
        self.answer_edit: QLineEdit | None = None
        self.buttons: list[QPushButton] = []
        if request.kind == "approval":
            self._add(row, "Deny", "Refuse this action", False)
            approve = self._add(row, "Approve", "Allow this action", True)
            approve.setDefault(True)
        else:
            for choice in request.choices:
                self._add(row, choice, f"Answer '{choice}'", choice)
            self.answer_edit = QLineEdit(self)
            self.answer_edit.setPlaceholderText("Your answer…")
            self.answer_edit.setAccessibleName("Answer")
            self.answer_edit.returnPressed.connect(self._on_answer_edit_return_pressed)
            row.insertWidget(0, self.answer_edit, 3)
            self._add(row, "Answer", "Send this answer", None)
        lay.addLayout(row)

    def _add(self, row: QHBoxLayout, text: str, description: str, value: object) -> QPushButton:
        b = QPushButton(text, self)
        b.setAccessibleName(text)
        b.setAccessibleDescription(description)
        b.clicked.connect(lambda: self._answer(value))
        row.addWidget(b)
        self.buttons.append(b)
        return b

    def _answer(self, value: object) -> None:
        if value is None:
            value = self.answer_edit.text().strip() if self.answer_edit is not None else ""
            if not value:
                return
        for b in self.buttons:
            b.setEnabled(False)
        if self.answer_edit is not None:
            self.answer_edit.setEnabled(False)
        self.answered.emit(self.request.request_id, value)

    def _on_answer_edit_return_pressed(self) -> None:
        self._answer(None)


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
