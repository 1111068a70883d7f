"""Hermes' file checkpoints of a session: listed, diffed against the files now, restored.

`rollback.list {session_id}` -> `{enabled, checkpoints: [{hash, timestamp, message}]}` (0.19
leaves `message` empty), `rollback.diff {hash}` -> `{stat, diff}` (the checkpoint against the
working tree now, cut at 4,000 characters), `rollback.restore {hash, file_path?}` ->
`{success, error?, history_removed?}`; a full restore while a turn runs is refused with 4009,
and it also drops the session's last exchange from the agent's context (0.19/0.20.1: its
memory only, session.history keeps the rows; 0.22: the history is rewound). Hermes takes a
checkpoint before the agent's first file change in a turn, only in a gateway process started
with HERMES_TUI_CHECKPOINTS=1. The embedded gateway has none (-32601): the state says why.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime
from typing import Any

from desktop.common.codes import METHOD_NOT_FOUND, SESSION_BUSY
from desktop.common.methods import ROLLBACK_DIFF, ROLLBACK_LIST, ROLLBACK_RESTORE
from desktop.core.chats.conversation import Conversation
from desktop.core.chats.router import SessionRouter
from desktop.core.errors import GatewayError, RpcError
from desktop.core.link.supervisor import ConnectionSupervisor
from desktop.core.listeners import Notify, notice
from desktop.core.models import ChatMessage, Checkpoint, Role, RollbackState
from desktop.core.profile.agent.wind_down import call_past_turn_end

log = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, Any]], None]

NO_CHECKPOINTS = "this gateway keeps no file checkpoints"
CHECKPOINTS_OFF = (
    "checkpoints are off on this gateway (started without HERMES_TUI_CHECKPOINTS=1, "
    "or disabled in its config)"
)
OFFLINE = "not connected: checkpoints are asked for once the gateway is reachable"
BUSY = "Not restored: a reply is running. Stop it or let it finish, then restore"
# A checkpoint belongs to the turn it was taken in: after its prompt was sent (allowing for
# the two clocks and the gateway's whole seconds) and before the next prompt.
SLACK = 3.0


def parse_time(raw: Any) -> float | None:
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    if isinstance(raw, str) and raw:
        try:
            return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def checkpoint_for(
    state: RollbackState, messages: list[ChatMessage], reply_id: str
) -> Checkpoint | None:
    """The checkpoint taken in the turn of reply `reply_id`: the oldest one from its prompt
    (or, where a history row gave the prompt no time, the reply's start) to the next turn (a
    later one in the same span is a pre-restore snapshot, often within the same second: the
    gateway's newest-first order breaks the tie)."""
    at = next((i for i, m in enumerate(messages) if m.id == reply_id), None)
    if at is None:
        return None
    prompt = next((m for m in reversed(messages[:at]) if m.role is Role.USER), None)
    begun = (prompt.created_at if prompt is not None else 0.0) or messages[at].created_at
    if not begun:
        return None
    end = float("inf")
    later = next((i for i in range(at + 1, len(messages)) if messages[i].role is Role.USER), None)
    if later is not None:
        times = [m.created_at for m in messages[later:] if m.created_at]
        end = times[0] if times else end
    inside = [
        (n, c)
        for n, c in enumerate(state.checkpoints)
        if c.at is not None and begun - SLACK <= c.at < end
    ]
    return max(inside, key=lambda nc: nc[0])[1] if inside else None


def is_last_turn(messages: list[ChatMessage], reply_id: str) -> bool:
    """Whether no prompt follows reply `reply_id`: a full restore drops the session's last
    exchange, so it is offered on the last turn only."""
    at = next((i for i, m in enumerate(messages) if m.id == reply_id), None)
    return at is not None and not any(m.role is Role.USER for m in messages[at + 1 :])


class Rollback:
    """Checkpoints for one profile's sessions; outcomes reach listeners.

    Listener calls: `on_rollback(key, RollbackState)` after each answer, `on_notice(key,
    text)` for a restore's outcome. A full restore that trimmed the agent's history says so
    in the chat (a system row).
    """

    def __init__(
        self,
        supervisor: ConnectionSupervisor,
        router: SessionRouter,
        conversation: Callable[[str], Conversation | None],
        notify: Notify,
        *,
        spawn: Spawn,
        now: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        self._sup = supervisor
        self._router = router
        self._conversation = conversation
        self._notify = notify
        self._spawn = spawn
        self._now = now
        self._sleep = sleep
        self._notes = 0
        self._states: dict[str, RollbackState] = {}

    def state(self, key: str) -> RollbackState:
        return self._states.get(key, RollbackState())

    def load(self, key: str) -> None:
        """Ask for the session's checkpoints (again: a reconnect or a restore changes them)."""
        self._spawn(self._load(key))

    def diff(self, key: str, checkpoint: str) -> None:
        self._spawn(self._diff(key, checkpoint))

    def restore(self, key: str, checkpoint: str, file_path: str = "") -> None:
        """Put one file (`file_path`, relative to the session's directory) or every file back
        as it was at `checkpoint`."""
        self._spawn(self._restore(key, checkpoint, file_path))

    # -- calls ---------------------------------------------------------------------------------

    def _tell(self, key: str, state: RollbackState) -> None:
        self._states[key] = state
        self._notify(lambda listener: listener.on_rollback(key, state))

    async def _call(
        self, key: str, method: str, params: dict[str, Any], *, past_turn_end: bool = False
    ) -> Any:
        runtime = self._router.runtime_id(key)
        if not runtime:
            raise GatewayError(OFFLINE)
        params = {"session_id": runtime, **params}
        if not past_turn_end:
            return await self._sup.call(method, params)
        conv = self._conversation(key)
        return await call_past_turn_end(
            self._sup,
            self._sleep,
            method,
            params,
            running=lambda: conv is not None and conv.running,
        )

    async def _load(self, key: str) -> None:
        old = self.state(key)
        try:
            result = await self._call(key, ROLLBACK_LIST, {})
        except RpcError as exc:
            reason = NO_CHECKPOINTS if exc.code == METHOD_NOT_FOUND else exc.message
            self._tell(key, RollbackState(reason=reason, loaded=True))
            return
        except GatewayError as exc:
            log.info("rollback.list failed: %s", exc)
            self._tell(key, RollbackState(reason=str(exc) or OFFLINE, loaded=old.loaded))
            return
        if not isinstance(result, dict) or not result.get("enabled"):
            self._tell(key, RollbackState(reason=CHECKPOINTS_OFF, loaded=True))
            return
        rows = result.get("checkpoints")
        checkpoints = tuple(
            Checkpoint(str(c["hash"]), parse_time(c.get("timestamp")), str(c.get("message") or ""))
            for c in (rows if isinstance(rows, list) else [])
            if isinstance(c, dict) and c.get("hash")
        )
        known = {c.hash for c in checkpoints}
        diffs = {h: d for h, d in old.diffs.items() if h in known}
        self._tell(key, RollbackState(True, "", checkpoints, diffs, loaded=True))

    async def _diff(self, key: str, checkpoint: str) -> None:
        try:
            result = await self._call(key, ROLLBACK_DIFF, {"hash": checkpoint})
        except (RpcError, GatewayError) as exc:
            notice(self._notify, key, f"No diff from the checkpoint: {_why(exc)}")
            return
        text = str(result.get("diff") or "") if isinstance(result, dict) else ""
        old = self.state(key)
        self._tell(
            key,
            RollbackState(
                old.available,
                old.reason,
                old.checkpoints,
                {**old.diffs, checkpoint: text},
                old.loaded,
            ),
        )

    async def _restore(self, key: str, checkpoint: str, file_path: str) -> None:
        what = file_path or "the files"
        try:
            result = await self._call(
                key,
                ROLLBACK_RESTORE,
                {"hash": checkpoint, **({"file_path": file_path} if file_path else {})},
                past_turn_end=True,
            )
        except RpcError as exc:
            notice(
                self._notify,
                key,
                BUSY if exc.code == SESSION_BUSY else f"Not restored: {exc.message}",
            )
            return
        except GatewayError as exc:
            notice(self._notify, key, f"Not restored: {exc}")
            return
        if not isinstance(result, dict) or not result.get("success"):
            error = result.get("error") if isinstance(result, dict) else ""
            notice(self._notify, key, f"Not restored: {error or 'the gateway said no'}")
            self.load(key)
            return
        old = self.state(key)
        # The files moved: every diff against them is stale.
        self._tell(key, RollbackState(old.available, old.reason, old.checkpoints, {}, old.loaded))
        removed = result.get("history_removed")
        if not file_path and isinstance(removed, int) and removed > 0:
            self._forgotten(key, checkpoint, removed)
        short = checkpoint[:8]
        notice(self._notify, key, f"Restored {what} to checkpoint {short}")
        self.load(key)

    def _forgotten(self, key: str, checkpoint: str, removed: int) -> None:
        """Say in the chat that the agent forgot the last exchange: its rows stay on screen
        (0.19 and 0.20.1 keep them in session.history, so a reload shows them again)."""
        conv = self._conversation(key)
        if conv is None:
            return
        self._notes += 1
        conv.append_local(
            ChatMessage(
                id=f"{key}:rollback:{self._notes}",
                role=Role.SYSTEM,
                text=(
                    f"Files restored to checkpoint {checkpoint[:8]}. The agent no longer "
                    f"remembers the last exchange ({removed} messages left its context)."
                ),
                created_at=self._now(),
            )
        )


def _why(exc: Exception) -> str:
    if isinstance(exc, RpcError):
        return NO_CHECKPOINTS if exc.code == METHOD_NOT_FOUND else exc.message
    return str(exc)
