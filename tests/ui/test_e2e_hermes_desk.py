"""The agent desk end to end on real Hermes 0.19.0, 0.20.1.2 and 0.22.2, in the real window.

- The agent's task list: the todo tool's list is the checklist above the composer while the
  reply runs (0.19/0.20.1 `tool.complete.todos`; 0.22 `todo.updated`, its `todo_list` called
  through the tool-search bridge `tool_call`, as 0.22 defers it by default), gone after.
- Subagents: a turn that delegates (`delegate_task`; Hermes relays `subagent.*` events) shows
  the fold above the composer with the helper's goal, its end and its summary, from the
  keyboard and to a screen reader; it is still there after the chat is left and opened again.

The gateway is reached as a Remote profile; the scripted provider is a FakeOpenAIServer.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from tests.core.test_hermes_chats import NO_AUTO_TITLE
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.hermes_env import (
    HERMES_019,
    HERMES_0201,
    HERMES_022,
    HermesDist,
    hermes_gateway,
    line_params,
    require_hermes,
)
from tests.ui.e2e_support import App, until, use_remote_gateway
from tests.ui.settings_support import keep_loop  # noqa: F401 (fixture)

pytestmark = [
    pytest.mark.hermes,
    pytest.mark.slow,
    pytest.mark.usefixtures("keep_loop"),
    pytest.mark.timeout(400),
]

WAIT = 180.0
PID = "h"
LINES = line_params(HERMES_019, HERMES_0201, HERMES_022)
TASKS = [
    {"id": "1", "content": "Read the notes", "status": "completed"},
    {"id": "2", "content": "Write the summary", "status": "in_progress"},
    {"id": "3", "content": "Send it", "status": "pending"},
]


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer("ok") as fake:
        fake.side_reply = "UNSURE"  # 0.19 smart approvals: neither APPROVE nor DENY -> a card
        yield fake


def _open(root: Path, qtbot: Any, url: str, token: str) -> App:
    use_remote_gateway(root, url, token, pid=PID, name="Hermes")
    app = App.open(root, qtbot)
    app.window.switch_profile(PID)
    return app


def _todo_call(dist: HermesDist, todos: list[dict[str, str]]) -> tuple[str, dict[str, Any]]:
    """How the model calls the todo tool on this line: 0.22 defers `todo_list` behind its
    tool-search bridge (tools.tool_search.defer), so the model reaches it by `tool_call`."""
    if dist is HERMES_022:
        return ("tool_call", {"name": "todo_list", "arguments": {"todos": todos}})
    return ("todo", {"todos": todos})


def _rows(app: App) -> list[str]:
    return [row.text() for row in app.window.todo_list.rows]


@pytest.mark.parametrize("dist", LINES)
async def test_the_agents_task_list_is_a_checklist_above_the_composer_while_it_works(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer, dist: HermesDist
) -> None:
    require_hermes(dist)
    gate = threading.Event()  # the reply after the plan waits: the turn is still running
    provider.script = [
        {"content": "Planning.", "tool_calls": [_todo_call(dist, TASKS)]},
        {"content": "Summary written.", "gate": gate},
    ]
    async with hermes_gateway(
        tmp_path / "home", provider.base_url, dist, config_extra=NO_AUTO_TITLE
    ) as gw:
        app = _open(tmp_path / "app", qtbot, gw.url, gw.token)
        try:
            checklist = app.window.todo_list
            await until(app.controllers[PID].is_online, "online", WAIT)
            assert checklist.isHidden()
            app.type_and_send(qtbot, "summarise the notes")
            await until(checklist.isVisible, "the checklist above the composer", WAIT)
            assert checklist.heading.text() == "Tasks · 1 of 3 done"
            assert _rows(app) == ["✓  Read the notes", "▸  Write the summary", "○  Send it"]
            assert [r.accessibleName() for r in checklist.rows] == [
                "Read the notes: done",
                "Write the summary: in progress",
                "Send it: to do",
            ]
            gate.set()
            await until(
                lambda: any(m.text == "Summary written." for m in app.finished_replies()),
                "the reply",
                WAIT,
            )
            await until(checklist.isHidden, "no checklist once the reply is done", 30)
        finally:
            await app.close()


GOAL = "Count the files in the scratch folder"


@pytest.mark.parametrize("dist", LINES)
async def test_a_delegated_subagent_shows_in_the_fold_above_the_composer(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer, dist: HermesDist
) -> None:
    require_hermes(dist)
    provider.script = [
        {"content": "Delegating.", "tool_calls": [("delegate_task", {"goal": GOAL})]},
        # The parent's next call and the child's first race for these two: same answer.
        {"content": "Three files."},
        {"content": "Three files."},
    ]
    provider.side_reply = "Three files."  # 0.20.1's child may ask unstreamed
    async with hermes_gateway(
        tmp_path / "home", provider.base_url, dist, config_extra=NO_AUTO_TITLE
    ) as gw:
        app = _open(tmp_path / "app", qtbot, gw.url, gw.token)
        try:
            panel = app.window.work_panel
            await until(app.controllers[PID].is_online, "online", WAIT)
            assert panel.isHidden(), "no work yet: no fold"
            app.type_and_send(qtbot, "count the files with a helper")
            chat = app.window.session_key

            def row_text() -> str:
                rows = [r for k, r in panel.rows.items() if k.startswith("subagent:")]
                return rows[0].label.text() if rows else ""

            await until(lambda: " — done" in row_text(), "the helper's end", WAIT)
            assert row_text().endswith(": Three files."), "its summary"
            assert panel.isVisible()
            assert panel.toggle.text() == "1 subagent"
            assert GOAL in row_text() and "done" in row_text()
            [row] = [r for k, r in panel.rows.items() if k.startswith("subagent:")]
            assert row.stop.isHidden(), "a finished helper has nothing to stop"
            assert row.accessibleName().startswith(f"Subagent: ✓  {GOAL}"), row.accessibleName()
            await until(lambda: bool(app.finished_replies()), "the reply", WAIT)
            # Folded and unfolded from the keyboard.
            panel.toggle.setFocus()
            qtbot.keyClick(panel.toggle, Qt.Key.Key_Space)
            assert panel.body.isHidden() and panel.isVisible()
            qtbot.keyClick(panel.toggle, Qt.Key.Key_Space)
            assert not panel.body.isHidden()
            # Another chat has no work of its own; back in this one, the helper is still listed.
            app.window.new_chat()
            await until(panel.isHidden, "another chat: no fold", 30)
            app.window.open_session(chat)
            await until(lambda: GOAL in row_text(), "the helper listed again", WAIT)
        finally:
            await app.close()
