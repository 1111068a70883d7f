"""The bridge: backend callbacks become signals on the GUI thread; a session's events reach
the session signals only while it is the viewed one."""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QThread, Slot

from desktop.core.models import ConnectionState, ConnectionStatus
from desktop.ui.backend import Draft
from desktop.ui.window.bridge import ProfileBridge
from tests.ui.fakes import FakeBackend, assistant


class Receiver(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.got: list[tuple[object, bool]] = []

    @Slot(object)
    def on_status(self, status: object) -> None:
        self.got.append((status, QThread.currentThread() is self.thread()))


def _from_worker(call: Any) -> None:
    worker = threading.Thread(target=call)
    worker.start()
    worker.join()


def test_callbacks_from_a_worker_thread_arrive_on_the_gui_thread(qtbot: Any) -> None:
    backend = FakeBackend(pid="remote-1")
    bridge = ProfileBridge(backend)
    receiver = Receiver()
    bridge.status_changed.connect(receiver.on_status)
    status = ConnectionStatus(ConnectionState.RECONNECTING, 2, 5, retry_at=10.0)
    _from_worker(lambda: backend.emit("on_status", status))
    qtbot.wait_until(lambda: len(receiver.got) == 1)
    assert receiver.got == [(status, True)]


def test_only_the_viewed_sessions_events_reach_the_session_signals(qtbot: Any) -> None:
    backend = FakeBackend(pid="p9")
    bridge = ProfileBridge(backend)
    changed: list[object] = []
    bridge.message_changed.connect(changed.append)
    reply = assistant("a", "x")
    backend.emit("on_message_changed", "k", reply)
    assert changed == [], "no session viewed: nothing reaches the view"
    bridge.view("k")
    backend.emit("on_message_changed", "other", assistant("b", "y"))
    backend.emit("on_message_changed", "k", reply)
    assert changed == [reply]
    with qtbot.wait_signal(bridge.prompt_restored) as p:
        backend.emit("on_prompt_restored", "k", Draft("t"), "lost")
    assert p.args == [Draft("t"), "lost"]
    # Every session's end of a turn is news (the tray's); the view's composer hears its own.
    with (
        qtbot.assert_not_emitted(bridge.viewed_running),
        qtbot.wait_signal(bridge.running_changed) as r,
    ):
        backend.emit("on_running", "other", False)
    assert r.args == ["other", False]
    bridge.detach()
    with qtbot.assert_not_emitted(bridge.running_changed):
        backend.emit("on_running", "k", True)


def test_a_late_event_of_a_session_left_meanwhile_is_dropped_on_the_gui_thread(
    qtbot: Any,
) -> None:
    backend = FakeBackend(pid="p1")
    bridge = ProfileBridge(backend)
    bridge.view("k")
    changed: list[object] = []
    bridge.message_changed.connect(changed.append)
    _from_worker(lambda: backend.emit("on_message_changed", "k", assistant("a", "x")))
    bridge.view("other")  # the user opened another chat before the event was delivered
    QCoreApplication.processEvents()
    assert changed == []
    late = assistant("b", "y")
    _from_worker(lambda: backend.emit("on_message_changed", "other", late))
    qtbot.wait_until(lambda: changed == [late])


def test_the_viewed_session_keeps_being_viewed_under_its_durable_key(qtbot: Any) -> None:
    backend = FakeBackend(pid="p1")
    bridge = ProfileBridge(backend)
    bridge.view("local-1")
    with qtbot.wait_signal(bridge.viewed_key_changed) as k:
        backend.emit("on_session_key_changed", "local-1", "durable-1")
    assert k.args == ["durable-1"] and bridge.viewed_key == "durable-1"
    with qtbot.assert_not_emitted(bridge.viewed_key_changed):
        backend.emit("on_session_key_changed", "local-2", "durable-2")
    with qtbot.wait_signal(bridge.messages_appended):
        backend.emit("on_messages_appended", "durable-1", [assistant("a", "x")])
