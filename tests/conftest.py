"""Suite-wide fixtures: async tests with leak checks, temp dirs, and the qasync loop for UI tests.

`async def test_...` functions run on a fresh asyncio loop (or on the qasync loop when the test
asks for the `qloop` fixture). After the test body returns, the test fails if it left a task
running, a non-daemon thread alive, or (for Qt tests) an active QTimer behind.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Never let a test touch the user's real keyring or dirs.
os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")


class LeakError(AssertionError):
    pass


def _live_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.is_alive() and not t.daemon}


async def _settle_and_check(coro: Any, loop: asyncio.AbstractEventLoop) -> None:
    await coro
    # Give callbacks scheduled by the test's last await a chance to finish their own work.
    for _ in range(3):
        await asyncio.sleep(0)
    current = asyncio.current_task()
    leaked = [t for t in asyncio.all_tasks(loop) if t is not current and not t.done()]
    if leaked:
        for t in leaked:
            t.cancel()
        await asyncio.gather(*leaked, return_exceptions=True)
        names = ", ".join(sorted(t.get_name() + ":" + repr(t.get_coro()) for t in leaked))
        raise LeakError(f"test leaked {len(leaked)} running task(s): {names}")


def _run_plain(func: Any, kwargs: dict[str, Any]) -> None:
    before = _live_threads()
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(_settle_and_check(func(**kwargs), loop))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    gc.collect()
    leaked = _live_threads() - before
    if leaked:
        raise LeakError(f"test leaked thread(s): {[t.name for t in leaked]}")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    func = pyfuncitem.obj
    if not inspect.iscoroutinefunction(func):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}
    if "qloop" in pyfuncitem.funcargs:
        qloop = pyfuncitem.funcargs["qloop"]
        qloop.run_until_complete(_settle_and_check(func(**kwargs), qloop))
    else:
        _run_plain(func, kwargs)
    return True


@pytest.fixture
def qloop(qapp: Any) -> Iterator[asyncio.AbstractEventLoop]:
    """A qasync loop on the test QApplication; fails the test on leaked QTimers or threads."""
    import qasync
    from PySide6.QtCore import QTimer

    before_threads = _live_threads()
    before_timers = {id(t) for t in qapp.findChildren(QTimer) if t.isActive()}
    loop = qasync.QEventLoop(qapp, already_running=False)
    asyncio.set_event_loop(loop)
    try:
        yield loop
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    gc.collect()
    timers = [t for t in qapp.findChildren(QTimer) if t.isActive() and id(t) not in before_timers]
    if timers:
        raise LeakError(f"test leaked {len(timers)} active QTimer(s)")
    leaked = _live_threads() - before_threads
    if leaked:
        raise LeakError(f"test leaked thread(s): {[t.name for t in leaked]}")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A private, parallel-safe data dir standing in for the user's."""
    d = tmp_path / "data"
    d.mkdir()
    return d
