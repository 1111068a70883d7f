"""While a reply runs: Enter does the user's busy default (queue unless the gateway keeps
another), Steer now and Stop and send beside the text, Steer hidden with its reason where the
gateway lacks session.steer."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from desktop.core.profile.agent.steering import NOT_SERVED
from tests.ui.fakes import FakeBackend, assistant


def _running(qtbot: Any, make_window: Any, b: FakeBackend) -> Any:
    b.messages = {"s1": [assistant("a1", "working", streaming=True)]}
    win = make_window(b)
    win.open_session("s1")
    b.emit("on_running", "s1", True)
    qtbot.wait_until(lambda: win.composer.running)
    return win


def _type_enter(qtbot: Any, win: Any, text: str) -> None:
    edit = win.composer.edit
    edit.setFocus()
    qtbot.keyClicks(edit, text)
    qtbot.keyClick(edit, Qt.Key.Key_Return)


def _sent(b: FakeBackend) -> list[tuple[str, Any]]:
    return [c for c in b.calls if c[0] in ("send", "steer", "stop_and_send")]


def test_enter_queues_by_default_and_steers_where_the_gateway_keeps_steer(
    qtbot: Any, make_window: Any
) -> None:
    b = FakeBackend(pid="p1")
    win = _running(qtbot, make_window, b)
    _type_enter(qtbot, win, "later")
    assert [c[0] for c in _sent(b)] == ["send"]
    b.busy = "steer"
    b.emit("on_status", b.current_status)  # the default read from the gateway arrives
    _type_enter(qtbot, win, "now")
    assert _sent(b)[-1] == ("steer", ("s1", "now"))


def test_steer_now_and_stop_and_send_from_the_keyboard(qtbot: Any, make_window: Any) -> None:
    b = FakeBackend(pid="p1")
    win = _running(qtbot, make_window, b)
    composer = win.composer
    qtbot.keyClicks(composer.edit, "use French")
    assert composer.steer_button.isVisible() and composer.stop_send_button.isVisible()
    assert composer.steer_button.accessibleName() == "Steer now"
    composer.steer_button.setFocus()
    qtbot.keyClick(composer.steer_button, Qt.Key.Key_Space)
    assert _sent(b)[-1] == ("steer", ("s1", "use French"))
    assert composer.edit.toPlainText() == ""
    qtbot.keyClicks(composer.edit, "stop, do this")
    composer.stop_send_button.setFocus()
    qtbot.keyClick(composer.stop_send_button, Qt.Key.Key_Space)
    assert _sent(b)[-1] == ("stop_and_send", ("s1", "stop, do this", ()))


def test_steer_is_hidden_with_its_reason_where_the_gateway_lacks_it(
    qtbot: Any, make_window: Any
) -> None:
    b = FakeBackend(pid="p1")
    b.steer_offered = (False, NOT_SERVED)
    b.busy = "steer"  # a default that cannot be done here queues instead
    win = _running(qtbot, make_window, b)
    qtbot.keyClicks(win.composer.edit, "x")
    assert not win.composer.steer_button.isVisible()
    assert win.composer.stop_send_button.isVisible()
    assert NOT_SERVED in win.composer.stop_button.toolTip()
    qtbot.keyClick(win.composer.edit, Qt.Key.Key_Return)
    assert [c[0] for c in _sent(b)] == ["send"]
