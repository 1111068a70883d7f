"""Global exception hooks and the rotating log: unexpected errors are logged and shown, not lost."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import traceback
from collections.abc import Callable
from logging.handlers import RotatingFileHandler
from pathlib import Path
from types import TracebackType
from typing import Any

from platformdirs import user_state_dir
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

log = logging.getLogger(__name__)
# Every module of the app logs under `desktop.*`: the file handler sits on their parent.
app_log = logging.getLogger("desktop")
LOG_BYTES = 1_000_000
LOG_BACKUPS = 3


def log_dir() -> Path:
    """The user's state dir for logs (per-OS, via platformdirs)."""
    return Path(user_state_dir("hermes-qt", appauthor=False)) / "logs"


def install_log_file(directory: Path | None = None) -> Path:
    """Attach a rotating file handler to the app's loggers (`desktop.*`); returns its path."""
    directory = directory or log_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "hermes-qt.log"
    handler = RotatingFileHandler(
        path, maxBytes=LOG_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8"
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    app_log.addHandler(handler)
    app_log.setLevel(logging.INFO)
    return path


class ErrorReporter(QObject):
    """Shows unexpected errors to the user, non-modally, on the GUI thread.

    Signals:
        error_reported(str, str): summary and details; queued to the GUI thread.
    """

    error_reported = Signal(str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._parent = parent
        self.shown: list[str] = []
        self.error_reported.connect(self._on_error_reported, Qt.ConnectionType.QueuedConnection)

    @classmethod
    def present(cls, parent: QWidget | None, summary: str, details: str) -> None:
        """Put up a non-modal message box (patchable in tests)."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Unexpected error", summary, parent=parent)
        box.setDetailedText(details)
        box.setWindowModality(Qt.WindowModality.NonModal)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.show()

    def report(self, exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
        """Log an exception and show it; callable from any thread."""
        details = "".join(traceback.format_exception(exc_type, exc, tb))
        log.error("unhandled exception:\n%s", details)
        self.error_reported.emit(f"{exc_type.__name__}: {exc}", details)

    def _on_error_reported(self, summary: str, details: str) -> None:
        self.shown.append(summary)
        self.present(self._parent, summary, details)


def install_exception_hooks(reporter: ErrorReporter) -> Callable[[], None]:
    """Route sys/threading exceptions to `reporter`; returns a function restoring the old hooks."""
    old_sys, old_thread = sys.excepthook, threading.excepthook

    def sys_hook(t: type[BaseException], e: BaseException, tb: TracebackType | None) -> None:
        if issubclass(t, KeyboardInterrupt):
            old_sys(t, e, tb)
            return
        reporter.report(t, e, tb)

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None:
            reporter.report(args.exc_type, args.exc_value, args.exc_traceback)

    sys.excepthook = sys_hook
    threading.excepthook = thread_hook

    def restore() -> None:
        sys.excepthook, threading.excepthook = old_sys, old_thread

    return restore


def install_loop_handler(loop: asyncio.AbstractEventLoop, reporter: ErrorReporter) -> None:
    """Report exceptions asyncio would otherwise only print (unretrieved task errors)."""

    def handler(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, BaseException):
            reporter.report(type(exc), exc, exc.__traceback__)
        else:
            log.error("asyncio: %s", context.get("message", "unknown error"))

    loop.set_exception_handler(handler)
