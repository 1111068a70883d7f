"""The agent's work above the composer, in the real window: subagents and background processes
with Stop (from the keyboard too), a gateway without the method says why, and the task list as
a checklist while a reply runs."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from desktop.core.models import BackgroundProcess, SessionInfo, Subagent, TodoItem
from tests.ui.fakes import FakeBackend, assistant

RUNNING = Subagent("sa-1", "Run the tests", text="terminal: pytest -q", tools=("terminal: pytest",))
DONE = Subagent("sa-0", "Find the callers", status="completed", summary="Seven.", duration=3.0)
SERVER = BackgroundProcess("proc_1", "python -m http.server", pid=42, uptime=5)


def test_subagents_and_processes_are_listed_and_stopped(qtbot: Any, make_window: Any) -> None:
    b = FakeBackend(pid="p1")
    b.messages = {"s1": [assistant("a1", "hi")], "s2": [assistant("a2", "there")]}
    win = make_window(b)
    win.open_session("s1")
    panel = win.work_panel
    assert panel.isHidden(), "no subagents, no processes: no panel"

    info = SessionInfo(running=True, subagents=(DONE, RUNNING), processes=(SERVER,))
    b.emit("on_session_info", "s1", info)
    qtbot.wait_until(lambda: not panel.isHidden())
    assert panel.toggle.text() == "2 subagents, 1 running · 1 background process"
    done = panel.rows["subagent:sa-0"]
    assert "Find the callers — done, 3.0 s: Seven." in done.label.text()
    assert done.stop.isHidden(), "a finished one has nothing to stop"
    running = panel.rows["subagent:sa-1"]
    assert "running: terminal: pytest -q" in running.label.text()
    assert running.stop.accessibleName() == "Stop: Run the tests"
    running.stop.setFocus()
    qtbot.keyClick(running.stop, Qt.Key.Key_Space)
    assert ("stop_subagent", ("s1", "sa-1")) in b.calls
    qtbot.mouseClick(panel.rows["process:proc_1"].stop, Qt.MouseButton.LeftButton)
    assert ("kill_process", ("s1", "proc_1")) in b.calls

    # Asked to stop: it says so until its end comes.
    stopping = Subagent("sa-1", "Run the tests", stopping=True)
    b.emit("on_session_info", "s1", SessionInfo(running=True, subagents=(stopping,)))
    qtbot.wait_until(lambda: panel.rows["subagent:sa-1"].stop.text() == "Stopping…")
    assert not panel.rows["subagent:sa-1"].stop.isEnabled()

    # Folded from the heading: the rows go, the heading stays.
    qtbot.mouseClick(panel.toggle, Qt.MouseButton.LeftButton)
    assert panel.body.isHidden() and not panel.isHidden()

    win.open_session("s2")  # another chat: nothing of its own
    qtbot.wait_until(panel.isHidden)


def test_a_gateway_without_the_method_says_why_stop_is_off(qtbot: Any, make_window: Any) -> None:
    b = FakeBackend(pid="p1")
    b.messages = {"s1": [assistant("a1", "hi")]}
    b.work_reasons = ("This gateway cannot stop a subagent", "")
    win = make_window(b)
    win.open_session("s1")
    b.emit("on_session_info", "s1", SessionInfo(running=True, subagents=(RUNNING,)))
    panel = win.work_panel
    qtbot.wait_until(lambda: "subagent:sa-1" in panel.rows)
    stop = panel.rows["subagent:sa-1"].stop
    assert not stop.isEnabled()
    assert stop.toolTip() == "This gateway cannot stop a subagent"


def test_the_task_list_is_a_checklist_while_a_reply_runs(qtbot: Any, make_window: Any) -> None:
    b = FakeBackend(pid="p1")
    b.messages = {"s1": [assistant("a1", "hi")]}
    win = make_window(b)
    win.open_session("s1")
    todos = (TodoItem("Read", "completed"), TodoItem("Fix", "in_progress"), TodoItem("Test"))
    b.emit("on_session_info", "s1", SessionInfo(running=True, todos=todos))
    checklist = win.todo_list
    qtbot.wait_until(lambda: not checklist.isHidden())
    assert checklist.heading.text() == "Tasks · 1 of 3 done"
    assert [r.text() for r in checklist.rows] == ["✓  Read", "▸  Fix", "○  Test"]
    assert [r.accessibleName() for r in checklist.rows][-1] == "Test: to do"
    b.emit("on_session_info", "s1", SessionInfo(running=False, todos=todos))
    qtbot.wait_until(checklist.isHidden)  # the turn is over
