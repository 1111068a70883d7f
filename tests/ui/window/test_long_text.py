"""Text from outside (errors, titles, file names) never widens the window past its size."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QApplication, QWidget

from desktop.core.models import ConnectionState, ConnectionStatus, SessionSummary
from desktop.ui.backend import Draft
from tests.ui.fakes import FakeBackend, assistant, user

TOKEN = "sk-" + "A1b2C3d4" * 37  # 299 characters without a space: a pasted key, a URL, a hash
WIDTH = 900


def _right_edge(win: QWidget, widget: QWidget) -> int:
    return widget.mapTo(win, QPoint(widget.width(), 0)).x()


def _fits(win: Any) -> None:
    QApplication.processEvents()
    assert win.width() <= WIDTH, win.width()
    assert win.minimumSizeHint().width() <= WIDTH, win.minimumSizeHint().width()
    # What the user must still reach: the Send button and the connection area's buttons.
    for widget in (win.composer.send_button, win.connection.details_button):
        assert widget.isVisible() and _right_edge(win, widget) <= win.width(), widget


def test_an_unbreakable_word_in_any_message_keeps_the_window_and_its_buttons(
    make_window: Any,
) -> None:
    b = FakeBackend(pid="p1")
    b.summaries = [SessionSummary("s1", f"Chat about {TOKEN}", "hello", 1.0, 2)]
    b.messages = {"s1": [user("u1", "hello"), assistant("a1", "hi")]}
    win = make_window(b)
    win.open_session("s1")  # the title carries the token
    _fits(win)
    win.composer.restore_prompt(Draft("hello"), f"the gateway said {TOKEN}")
    _fits(win)
    b.emit("on_notice", "s1", f"Could not load: {TOKEN}")
    _fits(win)
    win.composer.set_save_state(False, f"disk error at {TOKEN}")
    _fits(win)
    win.composer.show_attached([], [f"{TOKEN}.png: files can be at most 5 MiB"])
    _fits(win)
    failed = ConnectionStatus(ConnectionState.FAILED, 1, 1, reason=f"token refused: {TOKEN}")
    b.emit("on_status", failed)
    _fits(win)
    # Nothing was cut from what the user can read in full (tooltip or wrapped text).
    assert TOKEN in win.composer.banner_label.text().replace("\u200b", "")
    assert TOKEN in win.title_label.toolTip()
