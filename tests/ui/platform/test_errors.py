"""Unhandled errors are logged to a rotating file and shown through a patchable hook."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from pathlib import Path
from typing import Any

from desktop.ui.platform.errors import (
    ErrorReporter,
    app_log,
    install_exception_hooks,
    install_log_file,
    install_loop_handler,
)


def test_sys_and_thread_exceptions_are_logged_and_shown(
    qtbot: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    shown: list[str] = []
    monkeypatch.setattr(ErrorReporter, "present", classmethod(lambda cls, p, s, d: shown.append(s)))
    path = install_log_file(tmp_path)
    reporter = ErrorReporter()
    before = sys.excepthook, threading.excepthook
    restore = install_exception_hooks(reporter)
    try:
        try:
            raise ValueError("boom in a slot")
        except ValueError:
            with qtbot.wait_signal(reporter.error_reported):
                sys.excepthook(*sys.exc_info())  # type: ignore[arg-type]
        worker = threading.Thread(target=lambda: 1 / 0)
        with qtbot.wait_signal(reporter.error_reported):
            worker.start()
            worker.join()
        qtbot.wait_until(lambda: len(shown) == 2)
    finally:
        restore()
        for h in list(app_log.handlers):
            if isinstance(h, logging.FileHandler):
                h.close()
                app_log.removeHandler(h)
    assert shown == ["ValueError: boom in a slot", "ZeroDivisionError: division by zero"]
    text = path.read_text()
    assert "boom in a slot" in text and "ZeroDivisionError" in text
    assert (sys.excepthook, threading.excepthook) == before


def test_loop_exception_handler_reports(qtbot: Any, monkeypatch: Any) -> None:
    shown: list[str] = []
    monkeypatch.setattr(ErrorReporter, "present", classmethod(lambda cls, p, s, d: shown.append(s)))
    reporter = ErrorReporter()
    loop = asyncio.new_event_loop()
    try:
        install_loop_handler(loop, reporter)
        loop.call_exception_handler({"message": "x", "exception": RuntimeError("lost task")})
    finally:
        loop.close()
    qtbot.wait_until(lambda: shown == ["RuntimeError: lost task"])


def test_the_log_file_gets_what_the_app_modules_log(tmp_path: Path) -> None:
    path = install_log_file(tmp_path)
    try:
        logging.getLogger("desktop.core.link.supervisor").warning("socket died: reset by peer")
        logging.getLogger("desktop.core.delivery.outbox").info("prompt back in the composer")
        logging.getLogger("websockets.client").warning("not ours")
    finally:
        for h in list(app_log.handlers):
            if isinstance(h, logging.FileHandler):
                h.close()
                app_log.removeHandler(h)
    text = path.read_text()
    assert "desktop.core.link.supervisor: socket died: reset by peer" in text
    assert "prompt back in the composer" in text
    assert "not ours" not in text  # third-party loggers stay out (their lines may hold URLs)
