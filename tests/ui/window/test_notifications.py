"""Notifications on a desktop without a tray: freedesktop D-Bus; a click opens that chat."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtWidgets import QWidget

from desktop.app.notifications import FreedesktopNotifier
from desktop.core.models import SessionSummary
from tests.support.fake_notifications import FakeNotificationServer, session_bus
from tests.ui.e2e_support import until
from tests.ui.fakes import FakeBackend, assistant
from tests.ui.settings_support import keep_loop  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("keep_loop")


def _backend() -> FakeBackend:
    b = FakeBackend(pid="p1")
    b.summaries = [
        SessionSummary("s1", "Open chat", "", 2.0, 1, False, 0),
        SessionSummary("s2", "Trip to Lisbon", "Day 3: Sintra", 1.0, 1, False, 0),
    ]
    b.messages = {"s1": [assistant("a1", "here")], "s2": [assistant("a2", "Day 3: Sintra")]}
    return b


@pytest.mark.qt_log_ignore("does not support (raise|propagateSizeHints)")  # offscreen plugin
async def test_a_reply_finished_unseen_shows_a_desktop_notification_that_opens_its_chat(
    qloop: Any, qtbot: Any, make_window: Any
) -> None:
    backend = _backend()
    win = make_window(backend)
    win.open_session("s1")
    other = QWidget()  # the user is in another window: the reply is unseen
    qtbot.addWidget(other)
    other.show()
    other.activateWindow()
    await until(lambda: not win.isActiveWindow(), "window in the background")
    assert win.tray.icon is None, "this desktop has no tray"
    with session_bus() as address:
        async with FakeNotificationServer(address) as server:
            notifier = FreedesktopNotifier("hermes-qt", win.tray.open_chat, bus=address)
            assert await notifier.start()
            win.tray.set_desktop_notifier(notifier)
            try:
                for listener in backend.listeners:
                    listener.on_running("s2", False)
                await until(lambda: len(server.shown) == 1, "a notification is shown")
                (shown,) = server.shown
                assert (shown.summary, shown.body) == ("Trip to Lisbon", "Day 3: Sintra")
                assert shown.actions == ["default", "Open chat"]
                assert shown.hints["desktop-entry"] == ("s", "hermes-qt")
                assert win.session_key == "s1"
                await server.click(shown)
                await until(lambda: win.session_key == "s2", "the clicked chat opens")
                assert win.title_label.text() == "Trip to Lisbon"
            finally:
                await notifier.aclose()


async def test_without_a_notification_service_the_tray_is_used(qloop: Any) -> None:
    with session_bus() as address:  # a bus, but nobody owns org.freedesktop.Notifications
        notifier = FreedesktopNotifier("hermes-qt", lambda tag: None, bus=address)
        assert not await notifier.start() and not notifier.available
        assert not await notifier.notify("t", "b", "tag")
    notifier = FreedesktopNotifier("hermes-qt", lambda tag: None, bus="unix:path=/nonexistent")
    assert not await notifier.start(), "no session bus at all"


@pytest.mark.qt_log_ignore(
    "does not support (raise|propagateSizeHints)", "systemTrayWindowChanged"
)  # the offscreen plugin has no real tray
def test_with_a_tray_and_no_dbus_the_balloon_is_used_and_its_click_opens_the_chat(
    qtbot: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from desktop.ui.platform.tray import Tray
    from desktop.ui.window.bridge import ProfileBridge
    from desktop.ui.window.main_window import MainWindow, ProfileEntry

    monkeypatch.setattr(Tray, "available", classmethod(lambda cls: True))
    backend = _backend()
    win = MainWindow([ProfileEntry("P1", ProfileBridge(backend))], settings, tray=Tray())
    qtbot.addWidget(win)
    win.show()
    win.open_session("s1")
    assert win.tray.icon is not None and win.tray.desktop is None
    shown: list[tuple[str, str]] = []
    monkeypatch.setattr(win.tray.icon, "showMessage", lambda t, b, *a: shown.append((t, b)))
    monkeypatch.setattr(win, "isActiveWindow", lambda: False)
    backend.emit("on_running", "s2", False)
    assert shown == [("Trip to Lisbon", "Day 3: Sintra")]
    win.tray.icon.messageClicked.emit()
    assert win.session_key == "s2" and win.title_label.text() == "Trip to Lisbon"
