"""An error that stops the app: one line on stderr, a dialog where a display exists, the log."""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import traceback
from collections.abc import Iterable
from pathlib import Path

from desktop.app.display import display_problem
from desktop.core.errors import HermesQtError

log = logging.getLogger("hermes_qt")
LOG_NAME = "hermes-qt.log"
# Platforms on which nobody would see a dialog (and exec() would wait for a click forever).
_HEADLESS = {"offscreen", "minimal", "vnc"}


def report_fatal(exc: BaseException, log_dirs: Iterable[Path], *, started: bool) -> int:
    """Log `exc` with its traceback, tell the user in one line (and a dialog); the exit code.

    `log_dirs`: where to write the log when the app's own log file is not open yet; the first
    writable one wins, the temp dir is the last resort.
    """
    log_file = _log_file(log_dirs)
    what = "stopped on an unexpected error" if started else "could not start"
    try:
        log.critical("hermes-qt %s", what, exc_info=(type(exc), exc, exc.__traceback__))
    except Exception:  # the log itself failing must not hide the reason from the user
        log_file = None
    summary = one_line(exc)
    where = f"details in {log_file}" if log_file else "no log file could be written"
    if sys.stderr is not None:  # None in a windowed (gui-script) start on Windows
        print(f"hermes-qt: {what}: {summary} ({where})", file=sys.stderr, flush=True)
    if dialog_possible():
        details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        _show_dialog(what, summary, log_file, details)
    return 1


def one_line(exc: BaseException) -> str:
    """`Type: message` on a single line; the message alone for the app's own errors, which
    are worded for the user."""
    text = " ".join(str(exc).split())
    if text and isinstance(exc, HermesQtError):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def dialog_possible(environ: dict[str, str] | None = None) -> bool:
    """True when a window would be seen: a real display, not an offscreen platform."""
    env = os.environ if environ is None else environ
    if env.get("QT_QPA_PLATFORM", "").split(":")[0] in _HEADLESS:
        return False
    return display_problem(dict(env)) is None


def _log_file(log_dirs: Iterable[Path]) -> Path | None:
    """The app's open log file, else a new one in the first writable directory."""
    for handler in log.handlers:
        if isinstance(handler, logging.FileHandler):
            return Path(handler.baseFilename)
    for directory in [*log_dirs, Path(tempfile.gettempdir())]:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            handler = logging.FileHandler(directory / LOG_NAME, encoding="utf-8")
        except OSError:
            continue
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        return directory / LOG_NAME
    return None


def _show_dialog(what: str, summary: str, log_file: Path | None, details: str) -> None:
    try:
        from PySide6.QtWidgets import QApplication, QMessageBox

        app = QApplication.instance() or QApplication(sys.argv[:1])
        box = QMessageBox(QMessageBox.Icon.Critical, "Hermes Qt", f"Hermes Qt {what}.")
        where = f"The log file has the details:\n{log_file}" if log_file else ""
        box.setInformativeText(f"{summary}\n\n{where}".strip())
        box.setDetailedText(details)
        box.exec()
        del app
    except Exception:  # Qt itself may be what failed: the stderr line already said why
        pass
