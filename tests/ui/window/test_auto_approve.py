"""The header's "auto-approve in this chat" and Compress, shown from what the gateway says."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from desktop.core.models import SessionInfo
from desktop.ui.agent.compress_focus import CompressFocus
from tests.ui.fakes import FakeBackend, assistant


def test_auto_approve_shows_the_gateways_state_and_a_click_asks_for_the_change(
    qtbot: Any, make_window: Any
) -> None:
    b = FakeBackend(pid="p1")
    b.messages = {"s1": [assistant("a1", "hi")], "s2": [assistant("a2", "there")]}
    win = make_window(b)
    win.open_session("s1")
    button = win.header.auto_approve
    assert button.isHidden(), "a gateway that says nothing of it: no toggle"

    b.emit("on_session_info", "s1", SessionInfo(model="m", auto_approve=False))
    qtbot.wait_until(lambda: not button.isHidden())
    assert (button.text(), button.isChecked()) == ("Auto-approve", False)
    assert button.accessibleName() == "Auto-approve in this chat"

    button.setFocus()
    qtbot.keyClick(button, Qt.Key.Key_Space)  # from the keyboard
    assert ("set_auto_approve", ("s1", True)) in b.calls
    assert not button.isChecked(), "not shown on before the gateway says so"

    b.emit("on_session_info", "s1", SessionInfo(model="m", auto_approve=True))
    qtbot.wait_until(button.isChecked)
    assert button.text() == "Auto-approve on"

    win.open_session("s2")  # another chat: its own state, here unknown
    qtbot.wait_until(button.isHidden)


def test_compress_is_offered_where_the_gateway_reports_the_context(
    qtbot: Any, make_window: Any, monkeypatch: Any
) -> None:
    b = FakeBackend(pid="p1")
    b.messages = {"s1": [assistant("a1", "hi")]}
    win = make_window(b)
    win.open_session("s1")
    button = win.header.compress
    assert button.isHidden(), "no context figure (the embedded gateway): no Compress"
    b.emit("on_session_info", "s1", SessionInfo(model="m", context_percent=20))
    qtbot.wait_until(lambda: win.context_label.text() == "context 20 %")
    assert button.isHidden(), "a context far from full: not offered"
    b.emit("on_session_info", "s1", SessionInfo(model="m", context_percent=80))
    qtbot.wait_until(lambda: not button.isHidden())
    assert button.accessibleName() == "Compress the conversation"
    answers = iter([None, "", "the parser bug"])
    monkeypatch.setattr(CompressFocus, "ask", classmethod(lambda cls, parent: next(answers)))
    button.setFocus()
    qtbot.keyClick(button, Qt.Key.Key_Space)
    assert not any(c[0] == "compress" for c in b.calls), "cancelled: nothing compressed"
    qtbot.keyClick(button, Qt.Key.Key_Space)
    assert ("compress", ("s1", "")) in b.calls  # no focus: the gateway's own choice
    qtbot.keyClick(button, Qt.Key.Key_Space)
    assert ("compress", ("s1", "the parser bug")) in b.calls  # session.compress{focus_topic}
