"""Fan-out of backend callbacks to duck-typed listeners, isolating each listener's failures."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

# `notify("on_sessions", summaries)`: call that method on every listener that has it.
Notify = Callable[..., None]


class ListenerSet:
    """The listeners of one backend; a listener implements only the callbacks it wants."""

    def __init__(self) -> None:
        self._listeners: list[Any] = []

    def add(self, listener: Any) -> None:
        self._listeners.append(listener)

    def remove(self, listener: Any) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def notify(self, method: str, *args: Any) -> None:
        for listener in list(self._listeners):
            callback = getattr(listener, method, None)
            if callback is None:
                continue
            try:
                callback(*args)
            except Exception:
                log.exception("listener %s failed", method)
