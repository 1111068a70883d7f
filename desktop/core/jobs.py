"""Background jobs of one owner: kept until done, cancelled together, a failure never silent."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from desktop.core.errors import GatewayError, HermesQtError

log = logging.getLogger(__name__)


class Jobs:
    """The tasks one owner (a controller, a router) started and has not seen end.

    A job that raises an error of this computer's side (disk, attachment: a `HermesQtError`
    that is no `GatewayError`) goes to `local_failure`, so the user hears of it; gateway errors
    are handled where they happen (retried on the next connect), and anything else is logged
    as the bug it is. No job is left for the garbage collector.
    """

    __slots__ = ("_local_failure", "_name", "_tasks")

    def __init__(self, name: str, local_failure: Callable[[HermesQtError], None]) -> None:
        self._name = name  # names the owner in the log
        self._local_failure = local_failure
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(self._report)

    def cancel(self) -> list[asyncio.Task[Any]]:
        """Cancel every job still running; returns them (to be awaited)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        return tasks

    async def aclose(self) -> None:
        """Cancel every job and wait until each has ended."""
        await asyncio.gather(*self.cancel(), return_exceptions=True)

    def __len__(self) -> int:
        return len(self._tasks)

    def _report(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled() or (exc := task.exception()) is None:
            return
        if isinstance(exc, HermesQtError) and not isinstance(exc, GatewayError):
            self._local_failure(exc)  # logged there, with what it means
        else:
            log.error("a %s job failed", self._name, exc_info=exc)
