"""One app per data dir: a QLockFile says who runs, a QLocalServer lets a second launch raise it."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

from PySide6.QtCore import QLockFile, QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

log = logging.getLogger(__name__)

LOCK_NAME = "hermes-qt.lock"
ACTIVATE = b"activate\n"
CONNECT_MS = 3000


def server_name(data_dir: Path) -> str:
    """A short per-user, per-data-dir name (local socket paths are limited to ~100 bytes)."""
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
    user = str(os.getuid()) if hasattr(os, "getuid") else os.environ.get("USERNAME", "")
    return f"hermes-qt-{user}-{digest}"


class SingleInstance(QObject):
    """`claim()` is True for the first app on a data dir; later launches ask it to come forward.

    Signals:
        activation_requested(): a second launch on the same data dir wants the window shown.
    """

    activation_requested = Signal()

    def __init__(self, data_dir: Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._name = server_name(data_dir)
        self._lock = QLockFile(str(data_dir / LOCK_NAME))
        # Never stale by age (the app runs for days); stale at once when its process is gone.
        self._lock.setStaleLockTime(0)
        self._server: QLocalServer | None = None

    def claim(self) -> bool:
        """Take the data dir; False when another live app holds it."""
        if not self._lock.tryLock(100):
            return False
        QLocalServer.removeServer(self._name)  # a socket file a killed instance left behind
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not server.listen(self._name):
            log.warning("cannot listen for second launches: %s", server.errorString())
            return True
        server.newConnection.connect(self._on_connection)
        self._server = server
        return True

    def owner_pid(self) -> int:
        # PySide6 6.10 returns (ok, pid, host, app), 6.11 (pid, host, app) with pid 0 for none.
        info: tuple[object, ...] = tuple(self._lock.getLockInfo())
        if len(info) == 4:
            return _as_pid(info[1]) if info[0] else 0
        return _as_pid(info[0]) if info else 0

    def release(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        self._lock.unlock()

    def _on_connection(self) -> None:
        assert self._server is not None
        while (sock := self._server.nextPendingConnection()) is not None:
            sock.readyRead.connect(lambda s=sock: self._on_ready(s))
            sock.disconnected.connect(sock.deleteLater)

    def _on_ready(self, sock: QLocalSocket) -> None:
        if bytes(sock.readAll().data()).startswith(ACTIVATE.strip()):
            log.info("a second launch on this data dir: raising the window")
            self.activation_requested.emit()
        sock.disconnectFromServer()


def ask_running_instance(data_dir: Path) -> bool:
    """From a second launch: ask the running app to raise its window; True when it was told."""
    sock = QLocalSocket()
    sock.connectToServer(server_name(data_dir))
    if not sock.waitForConnected(CONNECT_MS):
        return False
    sock.write(ACTIVATE)
    sent = sock.waitForBytesWritten(CONNECT_MS)
    sock.disconnectFromServer()
    return bool(sent)


def _as_pid(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
