"""The user's busy default, chosen from the arrow beside Send: kept on the gateway where it keeps
one (shown once it reads back), in this app's settings per profile where it keeps none; Enter
while a reply runs then does it."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from tests.ui.compose.test_busy_input import _running, _sent, _type_enter
from tests.ui.fakes import FakeBackend


def test_a_choice_goes_to_the_gateway_and_shows_once_read_back(
    qtbot: Any, make_window: Any
) -> None:
    b = FakeBackend(pid="p1")
    b.busy = "queue"  # the gateway keeps one
    win = _running(qtbot, make_window, b)
    choice = win.busy_choice
    assert choice.button.accessibleName() == "What Enter does while a reply runs"
    assert choice.actions["queue"].isChecked()
    assert "kept by the gateway" in choice.button.toolTip()

    choice.actions["interrupt"].trigger()
    assert ("keep_busy_default", "interrupt") in b.calls
    assert choice.actions["queue"].isChecked(), "not shown before the gateway says so"
    b.busy = "interrupt"
    b.emit("on_status", b.current_status)  # the controller reads it back, then says so
    qtbot.wait_until(choice.actions["interrupt"].isChecked)
    _type_enter(qtbot, win, "instead")
    assert _sent(b)[-1][0] == "stop_and_send"


def test_where_the_gateway_keeps_none_this_app_keeps_it(
    qtbot: Any, make_window: Any, settings: Any
) -> None:
    b = FakeBackend(pid="p1")  # busy None: the embedded gateway
    win = _running(qtbot, make_window, b)
    choice = win.busy_choice
    assert choice.actions["queue"].isChecked()
    # Reachable from the keyboard: a focusable button whose menu opens at once.
    assert choice.button.focusPolicy() == Qt.FocusPolicy.StrongFocus
    assert choice.button.menu() is choice.menu
    choice.actions["interrupt"].trigger()
    assert not any(c[0] == "keep_busy_default" for c in b.calls)
    assert "kept in this app" in choice.button.toolTip()
    _type_enter(qtbot, win, "instead")
    assert _sent(b)[-1][0] == "stop_and_send"
    assert settings.value("busy_default/p1") == "interrupt", "kept for the next start"
