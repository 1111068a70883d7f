"""The subagents a chat's turns spawned and the processes the agent left running, from Hermes'
own words: `subagent.start / thinking / progress / tool / complete` events (the same payload on
0.19, 0.20.1 and 0.22: `subagent_id`, `goal`, `text`, `tool_name`, `status`, `summary`,
`duration_seconds`), the live roster (`delegation.status {active}` on 0.19/0.20.1,
`subagent.list {subagents}` on 0.22) and `process.list {processes}`.

Pure functions over plain values: the conversation holds the roster, this module folds into it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from desktop.core.models import BackgroundProcess, Subagent

SUBAGENT_EVENTS = frozenset(
    {
        "subagent.spawn_requested",
        "subagent.start",
        "subagent.thinking",
        "subagent.progress",
        "subagent.tool",
        "subagent.text",
        "subagent.complete",
    }
)
# A child that left the live roster while this client was not watching: it ended, how is unseen.
ENDED = "ended"
# Tools kept per subagent (a long-running child calls hundreds).
MAX_TOOLS = 50
_LINE = 240


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _LINE else line[: _LINE - 1] + "…"


def subagent_id(payload: dict[str, Any]) -> str:
    """The child's handle; an older emitter without one is named by its task index."""
    sid = _str(payload.get("subagent_id"))
    if sid:
        return sid
    index = payload.get("task_index")
    return f"task-{index}" if isinstance(index, int) else ""


def fold_event(roster: dict[str, Subagent], etype: str, payload: dict[str, Any]) -> bool:
    """Fold one `subagent.*` event into `roster` (id -> Subagent, in spawn order); whether it
    changed anything the user sees."""
    sid = subagent_id(payload)
    if not sid or etype not in SUBAGENT_EVENTS:
        return False
    old = roster.get(sid)
    agent = old or Subagent(id=sid, goal="")
    changes: dict[str, Any] = {}
    goal = _line(_str(payload.get("goal")))
    if goal and goal != agent.goal:
        changes["goal"] = goal
    model = _str(payload.get("model"))
    if model and model != agent.model:
        changes["model"] = model
    depth = payload.get("depth")
    if isinstance(depth, int) and not isinstance(depth, bool) and depth != agent.depth:
        changes["depth"] = depth
    text = _line(_str(payload.get("text")))
    if etype == "subagent.complete":
        status = _str(payload.get("status")) or "completed"
        changes.update(
            status=status,
            stopping=False,
            summary=_str(payload.get("summary")) or _str(payload.get("text")),
            text="",
        )
        seconds = payload.get("duration_seconds")
        if isinstance(seconds, int | float) and not isinstance(seconds, bool):
            changes["duration"] = float(seconds)
    elif etype == "subagent.tool":
        name = _str(payload.get("tool_name")) or "tool"
        preview = _line(_str(payload.get("tool_preview")) or text)
        entry = f"{name}: {preview}" if preview else name
        changes["tools"] = (*agent.tools, entry)[-MAX_TOOLS:]
        changes["text"] = entry
    elif (
        etype in ("subagent.thinking", "subagent.progress", "subagent.start")
        and text
        and (etype != "subagent.start" or text != (goal or agent.goal))
    ):
        changes["text"] = text
    if old is None:
        roster[sid] = dataclasses.replace(agent, **changes)
        return True
    if etype != "subagent.complete" and agent.status not in ("running", ENDED):
        return False  # a late frame after its end changes nothing
    if etype != "subagent.complete" and agent.status == ENDED:
        changes["status"] = "running"  # it was only out of sight
    changes = {k: v for k, v in changes.items() if getattr(agent, k) != v}
    if not changes:
        return False
    roster[sid] = dataclasses.replace(agent, **changes)
    return True


def live_ids(result: Any) -> set[str] | None:
    """The subagent ids of a live-roster answer (`delegation.status` / `subagent.list`); None
    when it is not one."""
    if not isinstance(result, dict):
        return None
    rows = result.get("subagents", result.get("active"))
    if not isinstance(rows, list):
        return None
    return {sid for r in rows if isinstance(r, dict) and (sid := subagent_id(r))}


def fold_roster(roster: dict[str, Subagent], result: Any) -> bool:
    """Adopt the gateway's live roster after a reconnect: a child it lists runs (added when
    this client never saw it start), one it no longer lists that was running here ended while
    the client was away. Whether anything changed."""
    ids = live_ids(result)
    if ids is None:
        return False
    changed = False
    rows = result.get("subagents", result.get("active"))
    for raw in rows:
        if not isinstance(raw, dict):
            continue
        sid = subagent_id(raw)
        if sid and sid not in roster:
            roster[sid] = Subagent(
                id=sid,
                goal=_line(_str(raw.get("goal"))),
                model=_str(raw.get("model")),
                text=_line(_str(raw.get("last_tool"))),
            )
            changed = True
    for sid, agent in list(roster.items()):
        if agent.running and sid not in ids:
            roster[sid] = dataclasses.replace(agent, status=ENDED, stopping=False)
            changed = True
    return changed


def drop_finished(roster: dict[str, Subagent]) -> bool:
    """A new turn starts: the last turn's finished children go; running ones stay."""
    gone = [sid for sid, agent in roster.items() if not agent.running]
    for sid in gone:
        del roster[sid]
    return bool(gone)


def processes_of(result: Any) -> tuple[BackgroundProcess, ...] | None:
    """The rows of a `process.list` answer; None when it is not one."""
    rows = result.get("processes") if isinstance(result, dict) else None
    if not isinstance(rows, list):
        return None
    out: list[BackgroundProcess] = []
    for raw in rows:
        if not isinstance(raw, dict):
            continue
        pid_ = _str(raw.get("session_id")) or _str(raw.get("id"))
        if not pid_:
            continue
        pid = raw.get("pid")
        uptime = raw.get("uptime_seconds")
        tail = _str(raw.get("output_tail")) or _str(raw.get("output_preview"))
        out.append(
            BackgroundProcess(
                id=pid_,
                command=_line(_str(raw.get("command"))),
                status=_str(raw.get("status")) or "running",
                pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
                uptime=uptime if isinstance(uptime, int) and not isinstance(uptime, bool) else None,
                output=tail[-2000:],
            )
        )
    return tuple(out)


def started_background(payload: dict[str, Any]) -> bool:
    """Whether a `tool.complete` is a terminal call that left a process running."""
    args = payload.get("args")
    result = payload.get("result")
    if isinstance(args, dict) and args.get("background") is True:
        return True
    return isinstance(result, dict) and _str(result.get("session_id")).startswith("proc_")
