"""The agent's background work against real Hermes 0.19.0, 0.20.1 and 0.22.2 with a scripted
provider: a turn delegates to a subagent (`delegate_task`; Hermes relays `subagent.*` events) and
starts a background process (`terminal {background: true}`); the chat's info lists both, the
process is stopped with `process.kill`, a running subagent with `subagent.interrupt`, and after a
reconnect the list is asked again (`process.list`) and the context meter comes back from
`session.usage`. The todo tool's list reaches the checklist from `tool.complete.todos` (0.22:
`todo.updated`, its `todo_list` called through the tool-search bridge `tool_call`)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from desktop.core.models import Role
from tests.core.test_hermes_agent import ALL_LINES, agent
from tests.support.hermes_env import HERMES_022, HermesDist

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(300)]

GOAL = "Count the files in the scratch folder"
TASKS = [
    {"id": "1", "content": "Count the files", "status": "completed"},
    {"id": "2", "content": "Report the count", "status": "in_progress"},
]


def _todo_call(dist: HermesDist) -> tuple[str, dict[str, Any]]:
    """How the model calls the todo tool on this line: 0.22 defers `todo_list` behind its
    tool-search bridge (tools.tool_search.defer), so the model reaches it by `tool_call`."""
    if dist is HERMES_022:
        return ("tool_call", {"name": "todo_list", "arguments": {"todos": TASKS}})
    return ("todo", {"todos": TASKS})


@pytest.mark.parametrize("dist", ALL_LINES)
async def test_subagents_processes_and_todos_are_listed_and_stopped(
    tmp_path: Path, dist: HermesDist
) -> None:
    async with agent(tmp_path, dist) as a:
        a.fake.script = [
            {"content": "Delegating.", "tool_calls": [("delegate_task", {"goal": GOAL})]},
            # The parent's next call and the child's first race for these two: same answer.
            {"content": "Three files."},
            {"content": "Three files."},
        ]
        a.fake.side_reply = "Three files."  # 0.20.1's child may ask unstreamed
        key = await a.start_chat("count the files with a helper")
        a.ctl.open_session(key)  # shown, as the window does: its work is asked after snapshots
        conv = a.conv(key)

        def info():  # type: ignore[no-untyped-def]
            return a.ctl.session_info(key)

        await a.until(lambda: any(s.summary for s in info().subagents), "subagent reported", 120)
        helper = info().subagents[0]
        assert helper.goal == GOAL and helper.status == "completed"
        assert helper.summary == "Three files." and helper.duration is not None
        await a.until(lambda: not conv.running, "first turn end", 120)

        # A second prompt, the helper done: the process and the task list are the parent's.
        a.fake.script = [
            {
                "content": "A server.",
                "tool_calls": [("terminal", {"command": "sleep 300", "background": True})],
            },
            {"content": "Plan.", "tool_calls": [_todo_call(dist)]},
            {"content": "All done."},
        ]
        a.ctl.send(key, "now start the server and plan", ())
        await a.until(lambda: any(p.running for p in info().processes), "process listed", 120)
        proc = info().processes[0]
        assert proc.command == "sleep 300" and proc.pid
        await a.until(lambda: not conv.running and "All done." in a.replies(key), "turn end", 120)
        # The todo tool's list (0.19/0.20.1 tool.complete.todos, 0.22 todo.updated).
        assert [(t.content, t.status) for t in info().todos] == [
            (t["content"], t["status"]) for t in TASKS
        ]

        # A reconnect: the process list is asked again (the snapshot does not carry it); the
        # context meter stays right (the snapshot's info.usage on these lines).
        conv.set_processes(())  # what the client knew is gone: only the gateway can say
        await a.cut()
        await a.restore()
        await a.until(lambda: bool(info().processes), "process listed again", 60)
        assert info().processes[0].id == proc.id
        # The second prompt took the finished helper off the list; a reconnect adds none.
        assert info().subagents == ()
        await a.until(lambda: info().context_percent is not None, "context known again", 60)

        a.ctl.kill_process(key, proc.id)
        await a.until(
            lambda: not any(p.running and p.id == proc.id for p in info().processes),
            "process stopped",
            60,
        )
        assert not a.seen.of("on_notice") or all(
            "Not stopped" not in str(args) for args in a.seen.of("on_notice")
        )


@pytest.mark.parametrize("dist", ALL_LINES)
async def test_stop_ends_a_running_subagent(tmp_path: Path, dist: HermesDist) -> None:
    async with agent(tmp_path, dist) as a:
        gate = threading.Event()
        slow = {
            "content": "Working.",
            "tool_calls": [("terminal", {"command": "echo step"})],
            "gate": gate,
        }
        a.fake.script = [
            {"content": "Delegating.", "tool_calls": [("delegate_task", {"goal": GOAL})]},
            dict(slow),
            dict(slow),
            {"content": "Still working.", "tool_calls": [("terminal", {"command": "echo again"})]},
            {"content": "Done."},
            {"content": "Done."},
        ]
        key = await a.start_chat("count the files with a helper")

        def info():  # type: ignore[no-untyped-def]
            return a.ctl.session_info(key)

        await a.until(lambda: any(s.running for s in info().subagents), "subagent running", 120)
        helper = info().subagents[0]
        # Across a reconnect the gateway's live roster says it still runs (not "ended").
        await a.cut()
        await a.restore()
        await a.until(lambda: a.seen.of("on_session_info") != [], "info after reconnect", 30)
        assert info().subagents[0].id == helper.id and info().subagents[0].running
        a.ctl.stop_subagent(key, helper.id)
        await a.until(lambda: info().subagents[0].stopping, "stopping shown", 30)
        gate.set()
        await a.until(lambda: not info().subagents[0].running, "subagent ended", 120)
        ended = info().subagents[0]
        assert ended.status == "interrupted"
        assert not ended.stopping
        await a.until(lambda: not a.conv(key).running, "turn end", 120)
        assert any(m.role is Role.ASSISTANT for m in a.conv(key).messages)
