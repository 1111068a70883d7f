"""Hooks for bench/ inside the real app: start-up timestamps and in-app benchmark drivers."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from desktop.app.assembly import Core
    from desktop.core.models import ConnectionStatus
    from desktop.ui.backend import ChatBackend
    from desktop.ui.window.bridge import ProfileEntry
    from desktop.ui.window.main_window import MainWindow

# Names a bench.* module whose `drive(app)` runs inside the app (bench/apprun.py sets it).
BENCH_DRIVER_ENV = "HERMES_QT_BENCH_DRIVER"
# Set: print when the window first paints and when the profile is online (bench/startup.py).
BENCH_STARTUP_ENV = "HERMES_QT_BENCH_STARTUP"


def report_startup(window: MainWindow, backend: ChatBackend) -> None:
    """For bench/startup.py: print when the window first paints and when the profile is online."""
    import time

    from PySide6.QtCore import QEvent, QObject

    from desktop.core.listeners import BackendListener
    from desktop.core.models import ConnectionState

    class FirstPaint(QObject):
        def eventFilter(self, obj: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Paint:
                print(f"FIRST_PAINT {time.monotonic()}", flush=True)
                window.removeEventFilter(self)
            return False

    probe = FirstPaint(window)
    _kept.add(probe)  # its Python side must outlive this call to be called
    window.installEventFilter(probe)

    class Online(BackendListener):  # its other callbacks do nothing
        seen = False

        def on_status(self, status: ConnectionStatus) -> None:
            if status.state is ConnectionState.ONLINE and not self.seen:
                self.seen = True
                print(f"ONLINE {time.monotonic()}", flush=True)

    backend.subscribe(Online())
    if backend.status().state is ConnectionState.ONLINE:
        print(f"ONLINE {time.monotonic()}", flush=True)


@dataclass(slots=True)
class FirstPaints:
    """When (time.monotonic) the window, the chat list and the chat view were first painted,
    and how many rows each list held then; set by `watch_first_paints` before the window shows.
    A time is that of the paint event's arrival (what was painted is read then)."""

    window: float | None = None
    sidebar: float | None = None
    sidebar_rows: int = 0
    chat: float | None = None
    chat_rows: int = 0
    online: float | None = None  # when the profile first went online
    # Each paint of the chat list until it held this many rows or more: (time, rows). A start
    # lists the newest chats first and every one once the window is painted.
    sidebar_paints: list[tuple[float, int]] = field(default_factory=list)


FIRST_PAINTS = FirstPaints()
SIDEBAR_PAINTS = 50  # the chat list's paints kept in FirstPaints.sidebar_paints


def watch_first_paints(window: MainWindow, backend: ChatBackend) -> None:
    """For bench drivers: fill FIRST_PAINTS from paint events, installed before `show()`."""
    import time

    from PySide6.QtCore import QEvent, QObject

    from desktop.core.listeners import BackendListener
    from desktop.core.models import ConnectionState

    sidebar = window.sidebar.session_list.viewport()
    chat = window.chat_view.viewport()
    marks = FIRST_PAINTS

    class Probe(QObject):
        def eventFilter(self, obj: QObject, event: QEvent) -> bool:
            if event.type() != QEvent.Type.Paint:
                return False
            now = time.monotonic()
            if obj is window and marks.window is None:
                marks.window = now
            elif obj is sidebar:
                rows = window.sidebar.session_list.model().rowCount()
                if marks.sidebar is None:
                    marks.sidebar = now
                    marks.sidebar_rows = rows
                if len(marks.sidebar_paints) < SIDEBAR_PAINTS:
                    marks.sidebar_paints.append((now, rows))
            elif obj is chat and marks.chat is None and window.chat_view.chat_model.rowCount():
                marks.chat = now
                marks.chat_rows = window.chat_view.chat_model.rowCount()
            return False

    probe = Probe(window)
    _kept.add(probe)
    for widget in (window, sidebar, chat):
        widget.installEventFilter(probe)

    class Online(BackendListener):
        def on_status(self, status: ConnectionStatus) -> None:
            if status.state is ConnectionState.ONLINE and marks.online is None:
                marks.online = time.monotonic()

    backend.subscribe(Online())


@dataclass(frozen=True, slots=True)
class BenchApp:
    """What a benchmark driver running inside the app gets: the real window and core."""

    window: MainWindow
    core: Core
    entries: list[ProfileEntry]
    finish: Callable[[int], None]


def start_bench_driver(name: str, loop: asyncio.AbstractEventLoop, app: BenchApp) -> None:
    """For bench/: run `drive(app)` of the module `name` (only `bench.*`) inside the app.

    The benchmarks measure the app as users run it (its window, store and gateway child);
    the driver only opens sessions, scrolls and reads clocks, like a user with a stopwatch.
    """
    import importlib

    if not name.startswith("bench."):
        raise SystemExit(f"{BENCH_DRIVER_ENV} must name a bench.* module, not {name!r}")
    drive = importlib.import_module(name).drive
    task = loop.create_task(drive(app))

    def done(t: asyncio.Task[Any]) -> None:
        # A driver that fails ends the app with its traceback instead of leaving it running.
        if not t.cancelled() and t.exception() is not None:
            import traceback

            traceback.print_exception(t.exception(), file=sys.stderr)
            app.finish(3)

    task.add_done_callback(done)
    _kept.add(task)  # the loop keeps only a weak reference to a task
    task.add_done_callback(_kept.discard)


# What must live as long as the app although nothing else refers to it.
_kept: set[Any] = set()
