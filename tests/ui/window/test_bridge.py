"""The bridge: backend callbacks become signals on the GUI thread; a session's events reach
the session signals only while it is the viewed one."""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QThread, Slot

from desktop.core.models import ConnectionState, ConnectionStatus, SessionSummary
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


def test_the_chrome_follows_the_chat_a_frame_later_in_one_go(qtbot: Any) -> None:
    """A turn ends and a queued prompt's turn starts in one loop turn: the new reply's words go
    out at once; the chat list (sidebar, tabs) and the running state (composer, tray) follow a
    frame later, the list drawn once with the newest one, and the tray still hears the end."""
    backend = FakeBackend(pid="p1")
    bridge = ProfileBridge(backend)
    bridge.view("k")
    got: list[tuple[str, object]] = []
    bridge.message_changed.connect(lambda m: got.append(("words", m.text)))
    bridge.sessions_changed.connect(lambda s: got.append(("list", [x.title for x in s])))
    bridge.running_changed.connect(lambda k, r: got.append(("tray", r)))
    bridge.viewed_running.connect(lambda r: got.append(("composer", r)))
    (listener,) = backend.listeners  # straight to the bridge (FakeBackend.emit flushes)
    listener.on_running("k", False)
    listener.on_sessions([SessionSummary("k", "first list")])
    listener.on_running("k", True)
    listener.on_sessions([SessionSummary("k", "newest list")])
    listener.on_message_changed("k", assistant("a2", "Next"))
    assert got == [("words", "Next")]
    qtbot.wait_until(lambda: len(got) > 1)
    assert got == [
        ("words", "Next"),
        ("composer", False),
        ("tray", False),
        ("composer", True),
        ("tray", True),
        ("list", ["newest list"]),
    ]
    listener.on_running("k", False)
    bridge.detach()
    with qtbot.assert_not_emitted(bridge.running_changed, wait=50):
        pass  # what was on its way when the window closed goes nowhere


def test_a_new_chats_turn_start_on_its_way_follows_its_new_name(qtbot: Any) -> None:
    """A new chat's turn starts under its local key and the gateway names it moments later,
    before the chrome went out: the composer and the tabs still hear it, under the new name."""
    backend = FakeBackend(pid="p1")
    bridge = ProfileBridge(backend)
    bridge.view("local-1")
    got: list[tuple[str, object]] = []
    bridge.running_changed.connect(lambda k, r: got.append((k, r)))
    bridge.viewed_running.connect(lambda r: got.append(("composer", r)))
    (listener,) = backend.listeners
    listener.on_running("local-1", True)
    listener.on_session_key_changed("local-1", "durable-1")
    qtbot.wait_until(lambda: len(got) == 2)
    assert got == [("composer", True), ("durable-1", True)]
