"""Subagents and background processes on a conversation, from Hermes' own payloads (the shapes
the 0.19.0 / 0.22.2 wheels' `tui_gateway` relays: `_on_tool_progress` -> `subagent.*`,
`process.list`, `delegation.status`, `subagent.list`), and the todo list from
`tool.complete.todos` (0.19 / 0.20.1)."""

from __future__ import annotations

from typing import Any

from desktop.core.chats.conversation import Conversation
from desktop.core.chats.subagents import ENDED, processes_of
from desktop.core.link.protocol import Event
from desktop.core.models import ChatMessage, Role

ID = "sa-0-2309f8ca"
BASE = {
    "goal": "Count the files",
    "task_count": 1,
    "task_index": 0,
    "subagent_id": ID,
    "depth": 0,
    "model": "fake-model",
    "tool_count": 0,
}


def ev(type_: str, **payload: Any) -> Event:
    return Event(type_, "r1", payload, None)


def spawned() -> Conversation:
    conv = Conversation("s1")
    conv.apply(ev("message.start"))
    conv.apply(ev("subagent.start", **BASE, text="Count the files"))
    return conv


def test_a_subagent_shows_its_goal_live_line_tools_and_result() -> None:
    conv = spawned()
    info = conv.session_info()
    assert [(s.id, s.goal, s.status) for s in info.subagents] == [
        (ID, "Count the files", "running")
    ]
    assert info.subagents[0].text == ""  # the start's text is the goal: not said twice
    conv.apply(ev("subagent.thinking", **BASE, text="(⊙_⊙) reflecting..."))
    assert conv.session_info().subagents[0].text == "(⊙_⊙) reflecting..."
    conv.apply(ev("subagent.tool", **BASE, tool_name="terminal", text="ls -la"))
    assert conv.session_info().subagents[0].tools == ("terminal: ls -la",)
    conv.apply(
        ev(
            "subagent.complete",
            **BASE,
            status="completed",
            summary="Three files.",
            duration_seconds=0.09,
            text="Three files.",
        )
    )
    done = conv.session_info().subagents[0]
    assert (done.status, done.summary, done.duration, done.text) == (
        "completed",
        "Three files.",
        0.09,
        "",
    )
    # A late frame after its end changes nothing.
    assert not conv.apply(ev("subagent.thinking", **BASE, text="late"))


def test_finished_helpers_stay_until_the_next_prompt_running_ones_stay_after() -> None:
    conv = spawned()
    other = {**BASE, "subagent_id": "sa-1", "task_index": 1, "goal": "Other"}
    conv.apply(ev("subagent.start", **other))
    conv.apply(ev("subagent.complete", **BASE, status="completed", summary="x"))
    conv.apply(ev("message.complete", text="ok"))
    conv.apply(ev("message.start"))  # a turn of the gateway's own (a delegation's result)
    assert len(conv.session_info().subagents) == 2
    conv.append_local(ChatMessage(id="out:1", role=Role.USER, text="next", created_at=0))
    assert [s.id for s in conv.session_info().subagents] == ["sa-1"]


def test_the_live_roster_after_a_reconnect_ends_one_gone_and_adds_one_unseen() -> None:
    conv = spawned()
    conv.mark_stopping(ID)
    assert conv.session_info().subagents[0].stopping
    # 0.22's subagent.list: the first child is gone, another one runs.
    conv.adopt_roster(
        {
            "subagents": [{"subagent_id": "sa-9", "goal": "New one", "status": "running"}],
            "delegations": [],
        }
    )
    shown = {s.id: s for s in conv.session_info().subagents}
    assert shown[ID].status == ENDED and not shown[ID].stopping
    assert shown["sa-9"].running and shown["sa-9"].goal == "New one"
    # 0.19's delegation.status shape is read the same.
    conv.adopt_roster({"active": [], "paused": False})
    assert not conv.session_info().subagents[-1].running


def test_processes_are_read_from_process_list() -> None:
    rows = processes_of(
        {
            "processes": [
                {
                    "session_id": "proc_7141004c9ec5",
                    "command": "sleep 300",
                    "cwd": "/w",
                    "pid": 10859,
                    "started_at": "2026-12-02T04:05:43",
                    "uptime_seconds": 4,
                    "status": "running",
                    "output_preview": "",
                    "output_tail": "listening on 8000\n",
                }
            ]
        }
    )
    assert rows is not None and len(rows) == 1
    proc = rows[0]
    assert (proc.id, proc.command, proc.pid, proc.uptime, proc.running) == (
        "proc_7141004c9ec5",
        "sleep 300",
        10859,
        4,
        True,
    )
    assert proc.output == "listening on 8000\n"
    conv = Conversation("s1")
    conv.set_processes(rows)
    assert conv.session_info().processes == rows
    assert processes_of({"error": "x"}) is None


def test_the_todo_tools_list_in_tool_complete_is_the_checklist() -> None:
    conv = spawned()
    todos = [
        {"id": "1", "content": "Count files", "status": "completed"},
        {"id": "2", "content": "Report", "status": "in_progress"},
    ]
    conv.apply(ev("tool.start", tool_id="c5", name="todo", context="planning 2 task(s)"))
    conv.apply(
        ev(
            "tool.complete",
            tool_id="c5",
            name="todo",
            args={"todos": todos},
            result={"todos": todos},
            todos=todos,
        )
    )
    assert [(t.content, t.status) for t in conv.session_info().todos] == [
        ("Count files", "completed"),
        ("Report", "in_progress"),
    ]


def test_no_context_figure_says_why() -> None:
    conv = Conversation("s1")
    conv.adopt_usage({"calls": 0, "input": 0, "output": 0, "total": 0}, "no figure yet")
    assert conv.session_info().context_percent is None
    assert conv.session_info().context_note == "no figure yet"
    conv.adopt_usage({"context_used": 50, "context_max": 100}, "")
    assert conv.session_info().context_percent == 50
    assert conv.session_info().context_note == ""
