"""The chat view paints its own background: a streaming reply's frames repaint no widget under
it, and the window looks exactly as the theme painted it behind a see-through view."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QApplication, QScrollBar

from desktop.core.models import SessionSummary
from desktop.ui.theme import DARK, LIGHT, ThemeManager, ThemeMode
from tests.ui.fakes import FakeBackend, assistant, user


@pytest.fixture(autouse=True)
def _theme_put_back(qapp: Any) -> Any:
    """Each test applies a theme to the whole app: the ones after it see the app as before."""
    sheet, palette = qapp.styleSheet(), qapp.palette()
    yield
    qapp.setStyleSheet(sheet)
    qapp.setPalette(palette)


def _window(make_window: Any, mode: ThemeMode, earlier: int = 0) -> Any:
    ThemeManager(QApplication.instance(), mode)  # type: ignore[arg-type]
    b = FakeBackend(pid="p1")
    b.summaries = [SessionSummary("s1", "chat", "", 1.0, 2)]
    chat = [user("u1", "hello there"), assistant("a1", "A reply, **bold**.")]
    chat += [(user if i % 2 else assistant)(f"m{i}", f"message {i} " * 9) for i in range(earlier)]
    b.messages = {"s1": chat}
    win = make_window(b)
    win.set_colors(DARK if mode is ThemeMode.DARK else LIGHT)
    win.open_session("s1")
    return win, b


def _shot(qtbot: Any, win: Any, focused: bool) -> Any:
    if focused:
        win.chat_view.setFocus()
        qtbot.wait_until(win.chat_view.hasFocus)
    else:
        win.focus_composer()
        qtbot.wait_until(lambda: not win.chat_view.hasFocus())
    win.chat_view.viewport().repaint()
    return win.grab().toImage()


@pytest.mark.parametrize("mode", [ThemeMode.LIGHT, ThemeMode.DARK])
@pytest.mark.parametrize("focused", [False, True], ids=["", "focused"])
def test_the_view_looks_as_the_theme_paints_it_behind_a_see_through_view(
    qtbot: Any, make_window: Any, mode: ThemeMode, focused: bool
) -> None:
    # Its rounded border (in the focus colour when focused) reaches into the view's corners;
    # the scroll bar's background is see-through in the theme.
    win, _b = _window(make_window, mode, earlier=40)
    own = _shot(qtbot, win, focused)
    view = win.chat_view
    value = view.verticalScrollBar().value()
    view.viewport().setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, False)
    view._backdrop.paint = lambda _painter, _rect: None  # the theme paints behind it
    view.setVerticalScrollBar(QScrollBar())  # Qt's own, see-through, in a see-through box
    view.verticalScrollBar().parentWidget().setAttribute(
        Qt.WidgetAttribute.WA_OpaquePaintEvent, False
    )
    view.verticalScrollBar().setValue(value)
    assert view.verticalScrollBar().maximum() > 0, "no scroll bar handle to compare"
    assert _shot(qtbot, win, focused) == own


def test_a_streaming_reply_repaints_no_widget_under_the_view(qtbot: Any, make_window: Any) -> None:
    # Each frame of a reply repainted the window, its splitter, the pane and the view's frame
    # under the view first: ~14 % of the UI thread while a reply streamed.
    win, b = _window(make_window, ThemeMode.LIGHT, earlier=40)  # screens of it: a scroll bar
    painted: list[str] = []

    class Paints(QObject):
        def eventFilter(self, obj: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Paint:
                painted.append(type(obj).__name__)
            return False

    spy = Paints(win)
    under = [win, win.chat_view]
    parent = win.chat_view.parentWidget()
    while parent is not None and parent is not win:
        under.append(parent)
        parent = parent.parentWidget()
    reply = assistant("a2", "Growing", streaming=True)
    b.emit("on_message_changed", "s1", reply)
    view = win.chat_view
    qtbot.wait_until(lambda: view.chat_model.row_of("a2") is not None)
    view.viewport().repaint()
    for widget in under:
        widget.installEventFilter(spy)
    for k in range(40):  # line after line: the scroll bar moves too
        reply.text += f" w{k}"
        with qtbot.wait_signal(view.chat_model.flushed):
            b.emit("on_message_changed", "s1", reply)
        qtbot.wait_until(lambda: not view.chat_model._dirty)
        QApplication.processEvents()
    assert view.verticalScrollBar().maximum() > 0, "no scroll bar to move"
    assert painted == [], f"painted under the view: {sorted(set(painted))}"
