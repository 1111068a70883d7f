"""The bridge turns backend callbacks into profile-tagged signals delivered on the GUI thread."""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import QObject, QThread, Slot

from desktop.core.models import ConnectionState, ConnectionStatus
from desktop.ui.backend import Draft
from desktop.ui.window.bridge import BackendBridge
from tests.ui.fakes import FakeBackend, assistant


class Receiver(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.got: list[tuple[str, object, bool]] = []

    @Slot(str, object)
    def on_status(self, profile_id: str, status: object) -> None:
        self.got.append((profile_id, status, QThread.currentThread() is self.thread()))


def test_callbacks_from_a_worker_thread_arrive_on_the_gui_thread(qtbot: Any) -> None:
    backend = FakeBackend(pid="remote-1")
    bridge = BackendBridge(backend)
    receiver = Receiver()
    bridge.status_changed.connect(receiver.on_status)
    status = ConnectionStatus(ConnectionState.RECONNECTING, 2, 5, retry_at=10.0)
    worker = threading.Thread(target=lambda: backend.emit("on_status", status))
    worker.start()
    worker.join()
    qtbot.wait_until(lambda: len(receiver.got) == 1)
    assert receiver.got == [("remote-1", status, True)]


def test_every_callback_is_tagged_with_the_profile(qtbot: Any) -> None:
    backend = FakeBackend(pid="p9")
    bridge = BackendBridge(backend)
    with qtbot.wait_signal(bridge.message_changed) as m:
        backend.emit("on_message_changed", "k", assistant("a", "x"))
    assert m.args[:2] == ["p9", "k"]
    with qtbot.wait_signal(bridge.prompt_restored) as p:
        backend.emit("on_prompt_restored", "k", Draft("t"), "lost")
    assert p.args == ["p9", "k", Draft("t"), "lost"]
    bridge.detach()
    with qtbot.assert_not_emitted(bridge.running_changed):
        backend.emit("on_running", "k", True)
