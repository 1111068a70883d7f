"""The pending requests of the open chat (approvals, questions, secrets), as answerable cards."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from desktop.ui.backend import ApprovalRequest
from desktop.ui.chat.approval import ApprovalCard


class ApprovalsPanel(QWidget):
    """One card per pending request, above the composer; hidden when nothing is pending.

    Signals:
        answered(str, object, bool): request id, the answer, whether its card had the focus.
    """

    answered = Signal(str, object, bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Pending requests")
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(16, 0, 16, 0)
        self.hide()

    def show_requests(self, requests: Sequence[ApprovalRequest]) -> None:
        """Cards follow `requests`; a new one takes the focus, a half-typed answer stays."""
        pending = {request.request_id: request for request in requests}
        kept: set[str] = set()
        for card in self.findChildren(ApprovalCard):
            if pending.get(card.request.request_id) == card.request:
                kept.add(card.request.request_id)
                continue
            card.setParent(None)
            card.deleteLater()
        added: ApprovalCard | None = None
        for request in pending.values():
            if request.request_id in kept:
                continue
            added = ApprovalCard(request, self)
            added.answered.connect(self._on_card_answered)
            self._layout.addWidget(added)
        self.setVisible(bool(pending))
        if added is not None:
            added.focus_first()  # keyboard first: no Tab hunt to reach the question

    def _on_card_answered(self, request_id: str, answer: object) -> None:
        card = self.sender()
        had_focus = isinstance(card, ApprovalCard) and card.answered_with_focus
        self.answered.emit(request_id, answer, had_focus)
