"""What a streaming reply's deltas cost the window besides the reply itself, counted.

A delta changes one reply's text: the queued follow-ups above the composer, the outbox they
are read from (the store, on a real profile) and their rows' buttons are not its business.
Counted, not timed: the counts stay bounded however long the reply grows.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from desktop.core.delivery.outbox import HELD
from desktop.core.models import ChatMessage, DeliveryState, SessionSummary
from tests.ui.fakes import FakeBackend, assistant, user

DELTAS = 300


def _queued_behind_a_reply() -> tuple[FakeBackend, ChatMessage, list[ChatMessage]]:
    b = FakeBackend(pid="p1")
    b.summaries = [SessionSummary("s1", "Refactor", "", 1.0, 2)]
    queued = []
    for i, text in enumerate(("Then add tests for the parser", "And update the changelog")):
        m = user(f"out:{i}", text, DeliveryState.PENDING)
        m.delivery_error = HELD
        queued.append(m)
    reply = assistant("a1", "", streaming=True)
    b.messages = {"s1": [user("u1", "Refactor the config loader"), reply, *queued]}
    b.queued_rows = {"s1": list(queued)}
    return b, reply, queued


class _Counting(FakeBackend):
    """Counts the window's reads of the queued follow-ups (the outbox, on a real profile)."""

    reads = 0

    def queued(self, key: str) -> list[ChatMessage]:
        self.reads += 1
        return super().queued(key)


def test_deltas_read_no_queue_and_keep_the_queued_rows(qtbot: Any, make_window: Any) -> None:
    plain, reply, queued = _queued_behind_a_reply()
    b = _Counting(pid=plain.pid, summaries=plain.summaries, messages=plain.messages)
    b.queued_rows = plain.queued_rows
    win = make_window(b)
    win.open_session("s1")
    b.emit("on_running", "s1", True)
    rows = list(win.queued_rows.rows)
    assert [r.message_id for r in rows] == ["out:0", "out:1"]
    reads = b.reads
    for k in range(DELTAS):
        reply.text += f"w{k} " if k % 40 else "\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
        b.emit("on_message_changed", "s1", reply)
    # Not one read of the outbox per delta: none at all while the reply grows.
    assert b.reads - reads == 0
    assert win.queued_rows.rows == rows  # the same row widgets, not rebuilt per delta
    # The reply's end is heard: the first follow-up goes out and leaves the rows.
    b.queued_rows = {"s1": [queued[1]]}
    reply.streaming = False
    b.emit("on_message_changed", "s1", reply)
    assert [r.message_id for r in win.queued_rows.rows] == ["out:1"]
    assert b.reads - reads == 1


def test_a_click_on_steer_now_is_not_lost_to_the_deltas(qtbot: Any, make_window: Any) -> None:
    b, reply, _queued = _queued_behind_a_reply()
    win = make_window(b)
    win.open_session("s1")
    b.emit("on_running", "s1", True)
    steer = win.queued_rows.rows[0].buttons["steer"]
    assert steer.isVisible()
    centre = QPoint(steer.width() // 2, steer.height() // 2)
    actions: list[tuple[str, str]] = []
    win.queued_rows.action.connect(lambda kind, mid: actions.append((kind, mid)))
    QTest.mousePress(steer, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, centre)
    for k in range(5):  # the reply keeps streaming while the button is held down
        reply.text += f"w{k} "
        b.emit("on_message_changed", "s1", reply)
        if k == 2:  # and the connection says it is online again: the same follow-ups
            b.emit("on_status", b.current_status)
        qtbot.wait_until(lambda: not win.chat_view.chat_model._dirty)
    held = win.queued_rows.rows[0].buttons["steer"]
    QTest.mouseRelease(held, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, centre)
    assert actions == [("steer", "out:0")]
