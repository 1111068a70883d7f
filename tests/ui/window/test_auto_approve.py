"""The header's "auto-approve in this chat" shows what the gateway says and asks to change it."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from desktop.core.models import SessionInfo
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
