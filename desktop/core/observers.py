"""One typed observer list: subscribe returns an unsubscribe, a failing listener stops no other."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

L = TypeVar("L")
Unsubscribe = Callable[[], None]


class _Subscription(Generic[L]):
    __slots__ = ("active", "listener")

    def __init__(self, listener: L) -> None:
        self.listener = listener
        self.active = True


class Observers(Generic[L]):
    """The listeners of one kind of event; `L` is their type (a callable or a protocol).

    `emit(lambda listener: listener.on_x(a, b))` calls every listener, so mypy checks each call
    against `L`. The rules, the same everywhere:
    - a listener subscribed during an emission hears from the next emission on;
    - once unsubscribed, a listener is not called again, not even later in the current emission;
    - each `subscribe` is its own subscription (the same listener twice is called twice) and
      its unsubscribe removes only that one; calling it again does nothing;
    - a listener that raises is logged and does not stop the others.
    """

    __slots__ = ("_name", "_subs")

    def __init__(self, name: str) -> None:
        self._name = name  # names the event in the log when a listener fails
        # Copy-on-write: emission iterates the tuple without copying it per event.
        self._subs: tuple[_Subscription[L], ...] = ()

    def subscribe(self, listener: L) -> Unsubscribe:
        sub = _Subscription(listener)
        self._subs = (*self._subs, sub)

        def unsubscribe() -> None:
            if sub.active:
                sub.active = False
                self._subs = tuple(s for s in self._subs if s is not sub)

        return unsubscribe

    def emit(self, call: Callable[[L], object], *, stop: Callable[[], bool] | None = None) -> int:
        """`call(listener)` for each listener; returns how many raised.

        `stop()` is asked after each listener: True ends this emission (e.g. its source died).
        """
        failed = 0
        for sub in self._subs:
            if not sub.active:
                continue
            try:
                call(sub.listener)
            except Exception:
                failed += 1
                log.exception("%s listener failed", self._name)
            if stop is not None and stop():
                break
        return failed

    def __len__(self) -> int:
        return len(self._subs)
