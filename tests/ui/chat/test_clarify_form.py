"""A clarify card with several questions (Hermes 0.22): every question with its choices, check
boxes where several may be picked, free text, all reachable and sent from the keyboard."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QCheckBox, QLineEdit, QRadioButton

from desktop.core.models import ApprovalRequest, Question
from desktop.ui.chat.approval import ApprovalCard
from tests.ui.fakes import FakeBackend, assistant, user

FORM = ApprovalRequest(
    "srq-1",
    "clarify",
    "The agent asks 3 questions",
    reply_to="srq-1",
    questions=(
        Question("q0", "Which env?", ("staging (Recommended)", "prod")),
        Question("q1", "Which regions?", ("eu", "us", "ap"), multi_select=True),
        Question("q2", "Anything else?"),
    ),
)


def _tab(times: int = 1) -> None:
    for _ in range(times):
        focused = QApplication.focusWidget()
        assert focused is not None
        QTest.keyClick(focused, Qt.Key.Key_Tab)


def test_multi_question_card_is_answered_with_the_keyboard_only(make_window: Any) -> None:
    b = FakeBackend(pid="p1")
    b.messages = {"s1": [user("u1", "deploy"), assistant("a1", "")]}
    win = make_window(b)
    win.show()
    win.activateWindow()
    win.open_session("s1")
    b.emit("on_approval_request", "s1", FORM)
    [card] = win.approvals.findChildren(ApprovalCard)
    radios = card.findChildren(QRadioButton)
    boxes = card.findChildren(QCheckBox)
    edits = card.findChildren(QLineEdit)
    assert [r.text() for r in radios] == ["staging (Recommended)", "prod"]
    assert [c.text() for c in boxes] == ["eu", "us", "ap"]
    assert len(edits) == 3  # a free-text answer for every question
    # The card took focus on the first question's first choice: Down, Space picks "prod".
    assert QApplication.focusWidget() is radios[0]
    QTest.keyClick(radios[0], Qt.Key.Key_Down)
    assert QApplication.focusWidget() is radios[1]
    QTest.keyClick(radios[1], Qt.Key.Key_Space)
    assert radios[1].isChecked() and not radios[0].isChecked()
    # Tab on to the free text of q0, then the check boxes of q1: Space picks eu and ap.
    _tab()
    assert QApplication.focusWidget() is edits[0]
    _tab()
    assert QApplication.focusWidget() is boxes[0]
    QTest.keyClick(boxes[0], Qt.Key.Key_Space)
    _tab(2)
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Space)
    _tab(2)  # past q1's free text to q2's
    assert QApplication.focusWidget() is edits[2]
    QTest.keyClicks(edits[2], "ship before noon")
    QTest.keyClick(edits[2], Qt.Key.Key_Return)  # Enter sends the whole form
    assert b.calls[-1] == (
        "respond",
        ("s1", "srq-1", {"q0": "prod", "q1": json.dumps(["eu", "ap"]), "q2": "ship before noon"}),
    )


def test_an_empty_form_is_not_sent_and_a_typed_answer_overrides_the_choice(
    make_window: Any,
) -> None:
    b = FakeBackend(pid="p1")
    b.messages = {"s1": [user("u1", "deploy")]}
    win = make_window(b)
    win.open_session("s1")
    b.emit("on_approval_request", "s1", FORM)
    [card] = win.approvals.findChildren(ApprovalCard)
    send = next(btn for btn in card.buttons if btn.text() == "Send answers")
    send.click()
    assert not any(c[0] == "respond" for c in b.calls)  # nothing answered yet: not sent
    card.findChildren(QRadioButton)[0].click()
    QTest.keyClicks(card.findChildren(QLineEdit)[0], "canary")
    send.click()
    assert b.calls[-1] == ("respond", ("s1", "srq-1", {"q0": "canary"}))
