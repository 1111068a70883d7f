"""The agent's work beyond the reply: the subagents a turn delegated to (Stop one with
`subagent.interrupt`) and the processes it left running (`process.list`, `process.kill`), plus
the session's usage asked again after a resume or reconnect (`session.usage`).

The events themselves fold into the conversation (desktop/core/chats/subagents.py); this part
asks the gateway what events cannot say: when a chat is opened and after every later snapshot
of it (a reconnect, a resume) the live roster, the processes and the usage, and the processes
again when a tool left one running or a turn ended with some listed. A gateway without a
method (-32601, learned into the dialect) is not asked again on that connection; the UI says
why the control is missing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from desktop.common.codes import METHOD_NOT_FOUND, NO_SUCH_PROCESS
from desktop.common.methods import (
    DELEGATION_STATUS,
    PROCESS_KILL,
    PROCESS_LIST,
    SESSION_USAGE,
    SUBAGENT_INTERRUPT,
    SUBAGENT_LIST,
)
from desktop.core.chats.conversation import Conversation
from desktop.core.chats.progress import context_of
from desktop.core.chats.router import SessionRouter
from desktop.core.chats.subagents import processes_of, started_background
from desktop.core.errors import GatewayError, RpcError
from desktop.core.link.dialect import Dialect
from desktop.core.link.protocol import Event
from desktop.core.listeners import Notify, notice

log = logging.getLogger(__name__)

Call = Callable[[str, dict[str, Any]], Coroutine[Any, Any, Any]]
Spawn = Callable[[Coroutine[Any, Any, Any]], None]

NO_INTERRUPT = "This gateway cannot stop a subagent (it has no subagent.interrupt)"
NO_PROCESSES = "This gateway does not list the agent's background processes (no process.list)"
NO_KILL = "This gateway cannot stop a background process (it has no process.kill)"
NO_USAGE = "This gateway does not report how full the model's context is"
USAGE_LATER = (
    "The gateway has no context figure for this chat yet: it reports one once a reply has run "
    "since the gateway (re)started"
)
ALREADY_ENDED = "That subagent had already finished"
PROCESS_GONE = "That process had already ended"


def work_support(dialect: Dialect | None) -> tuple[str, str]:
    """Why Stop on a subagent and on a process are missing on this connection ("" where
    served; unknown until the gateway refuses)."""
    if dialect is None:
        return "Not connected", "Not connected"
    sub = "" if dialect.has(SUBAGENT_INTERRUPT) else NO_INTERRUPT
    if not dialect.has(PROCESS_LIST):
        proc = NO_PROCESSES
    else:
        proc = "" if dialect.has(PROCESS_KILL) else NO_KILL
    return sub, proc


class BackgroundWork:
    """Subagent and process controls for one profile, and the asks that keep them current."""

    def __init__(
        self,
        *,
        call: Call,
        dialect: Callable[[], Dialect | None],
        router: SessionRouter,
        conversation: Callable[[str], Conversation | None],
        notify: Notify,
        spawn: Spawn,
    ) -> None:
        self._call = call
        self._dialect = dialect
        self._router = router
        self._conversation = conversation
        self._notify = notify
        self._spawn = spawn
        # The chats opened in this run: only theirs are asked after every snapshot (a
        # reconnect re-attaches every routed chat; most are never looked at).
        self._opened: set[str] = set()

    # -- intents ---------------------------------------------------------------------------

    def stop_subagent(self, key: str, subagent_id: str) -> None:
        self._spawn(self._stop_subagent(key, subagent_id))

    def kill_process(self, key: str, process_id: str) -> None:
        self._spawn(self._kill_process(key, process_id))

    def refresh_processes(self, key: str) -> None:
        self._spawn(self._refresh_processes(key))

    # -- what events cannot say -------------------------------------------------------------

    def opened(self, key: str) -> None:
        """The user opened chat `key`: its processes and usage are asked now (when attached)
        and after each later snapshot."""
        first = key not in self._opened
        self._opened.add(key)
        if first and self._router.runtime_id(key):
            self._spawn(self._after_snapshot(key))

    def rekey(self, temp_key: str, real_key: str) -> None:
        """A chat opened before the gateway made it now has its real key."""
        if temp_key in self._opened:
            self._opened.discard(temp_key)
            self.opened(real_key)  # its first snapshot may have come before this

    def on_snapshot(self, key: str, snapshot: dict[str, Any]) -> None:
        """A snapshot came (open, reconnect, resume): ask what it does not carry, for a chat
        opened in this run or one with work listed."""
        conv = self._conversation(key)
        if conv is None:
            return
        if key in self._opened or conv.processes or conv.subagents:
            self._spawn(self._after_snapshot(key))

    def on_event(self, event: Any, epoch: int) -> None:
        """A tool left a process running, or a turn ended with processes listed: list again."""
        if not isinstance(event, Event) or event.type not in ("tool.complete", "message.complete"):
            return
        key = self._key_of(event.session_id)
        conv = self._conversation(key) if key else None
        if key is None or conv is None:
            return
        if (event.type == "tool.complete" and started_background(event.payload)) or (
            event.type == "message.complete" and conv.processes
        ):
            self.refresh_processes(key)

    def _key_of(self, runtime: str | None) -> str | None:
        if not runtime:
            return None
        return next((k for k in self._router.routed if self._router.runtime_id(k) == runtime), None)

    async def _after_snapshot(self, key: str) -> None:
        conv = self._conversation(key)
        if conv is None:
            return
        await self._refresh_usage(key, conv)
        await self._refresh_processes(key)
        if conv.running or any(a.running for a in conv.subagents.values()):
            await self._refresh_roster(key, conv)

    async def _refresh_usage(self, key: str, conv: Conversation) -> None:
        if context_of(conv.usage)[0] is not None:
            return  # the snapshot (or a later event) carried the figure
        dialect = self._dialect()
        if dialect is not None and not dialect.has(SESSION_USAGE):
            conv.adopt_usage(None, NO_USAGE)
            return
        try:
            result = await self._ask(key, SESSION_USAGE, {})
        except RpcError as exc:
            conv.adopt_usage(None, NO_USAGE if exc.code == METHOD_NOT_FOUND else "")
            return
        except GatewayError:
            return
        known = isinstance(result, dict) and context_of(result)[0] is not None
        conv.adopt_usage(result, "" if known else USAGE_LATER)

    async def _refresh_roster(self, key: str, conv: Conversation) -> None:
        dialect = self._dialect()
        for method in (SUBAGENT_LIST, DELEGATION_STATUS):
            if dialect is not None and not dialect.has(method):
                continue
            try:
                result = await self._ask(key, method, {})
            except GatewayError:
                continue
            if method == DELEGATION_STATUS:
                # Gateway-wide: keep the children this session spawned (ids it reported),
                # and those whose owner is not said.
                result = _own_rows(result, conv)
            conv.adopt_roster(result)
            return

    async def _refresh_processes(self, key: str) -> None:
        dialect = self._dialect()
        conv = self._conversation(key)
        if conv is None or (dialect is not None and not dialect.has(PROCESS_LIST)):
            return
        try:
            result = await self._ask(key, PROCESS_LIST, {})
        except GatewayError as exc:
            log.info("process.list failed: %s", type(exc).__name__)
            return
        processes = processes_of(result)
        if processes is not None:
            conv.set_processes(processes)

    async def _stop_subagent(self, key: str, subagent_id: str) -> None:
        conv = self._conversation(key)
        if conv is None:
            return
        conv.mark_stopping(subagent_id)
        try:
            result = await self._ask(key, SUBAGENT_INTERRUPT, {"subagent_id": subagent_id})
        except RpcError as exc:
            conv.mark_stopping(subagent_id, False)
            text = NO_INTERRUPT if exc.code == METHOD_NOT_FOUND else exc.message
            notice(self._notify, key, f"Not stopped: {text}")
            return
        except GatewayError as exc:
            conv.mark_stopping(subagent_id, False)
            notice(self._notify, key, f"Not stopped: {exc}")
            return
        if isinstance(result, dict) and result.get("found") is False:
            conv.mark_stopping(subagent_id, False)
            notice(self._notify, key, ALREADY_ENDED)
            await self._refresh_roster(key, conv)

    async def _kill_process(self, key: str, process_id: str) -> None:
        try:
            await self._ask(key, PROCESS_KILL, {"process_id": process_id})
        except RpcError as exc:
            if exc.code == METHOD_NOT_FOUND:
                notice(self._notify, key, f"Not stopped: {NO_KILL}")
            elif exc.code == NO_SUCH_PROCESS:
                notice(self._notify, key, PROCESS_GONE)
            else:
                notice(self._notify, key, f"Not stopped: {exc.message}")
        except GatewayError as exc:
            notice(self._notify, key, f"Not stopped: {exc}")
            return
        await self._refresh_processes(key)

    async def _ask(self, key: str, method: str, params: dict[str, Any]) -> Any:
        runtime = self._router.runtime_id(key)
        if not runtime:
            raise _NoRuntimeError(f"{key}: not attached")
        return await self._call(method, {"session_id": runtime, **params})


class _NoRuntimeError(GatewayError):
    """The session has no runtime id on this gateway yet: nothing was sent."""


def _own_rows(result: Any, conv: Conversation) -> Any:
    if not isinstance(result, dict) or not isinstance(result.get("active"), list):
        return result
    rows = [
        r
        for r in result["active"]
        if isinstance(r, dict) and str(r.get("subagent_id") or "") in conv.subagents
    ]
    return {"active": rows}
