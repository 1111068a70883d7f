"""One app per data dir: a QLockFile says who runs, a local socket lets a second launch raise it.

The socket is a plain AF_UNIX one watched by a QSocketNotifier: Qt's QLocalServer would load
QtNetwork (its libraries, their Kerberos ones and the bindings: ~2.7 MB resident) for this one
connection. Where Python has no AF_UNIX (Windows), QLocalServer does the same job.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import tempfile
from pathlib import Path
from typing import Any

from PySide6.QtCore import QLockFile, QObject, QSocketNotifier, Signal

log = logging.getLogger(__name__)

LOCK_NAME = "hermes-qt.lock"
ACTIVATE = b"activate\n"
CONNECT_MS = 3000
UNIX = hasattr(socket, "AF_UNIX")


def server_name(data_dir: Path) -> str:
    """A short per-user, per-data-dir name (local socket paths are limited to ~100 bytes)."""
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
    user = str(os.getuid()) if hasattr(os, "getuid") else os.environ.get("USERNAME", "")
    return f"hermes-qt-{user}-{digest}"


def socket_path(data_dir: Path) -> str:
    """Where the running app listens: the user's runtime dir (private), else the temp dir."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    base = runtime if runtime and os.path.isdir(runtime) else tempfile.gettempdir()
    return os.path.join(base, server_name(data_dir))


class SingleInstance(QObject):
    """`claim()` is True for the first app on a data dir; later launches ask it to come forward.

    Signals:
        activation_requested(): a second launch on the same data dir wants the window shown.
    """

    activation_requested = Signal()

    def __init__(self, data_dir: Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._data_dir = data_dir
        self._lock = QLockFile(str(data_dir / LOCK_NAME))
        # Never stale by age (the app runs for days); stale at once when its process is gone.
        self._lock.setStaleLockTime(0)
        self._server: socket.socket | None = None
        self._path = ""
        # Listening socket and each connection not yet read, by descriptor.
        self._notifiers: dict[int, tuple[socket.socket, QSocketNotifier]] = {}
        self._qt_server: Any = None  # QLocalServer, where there is no AF_UNIX

    def claim(self) -> bool:
        """Take the data dir; False when another live app holds it."""
        if not self._lock.tryLock(100):
            return False
        if not UNIX:  # pragma: no cover - exercised on Windows only
            self._listen_qt()
            return True
        path = socket_path(self._data_dir)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # the socket of a killed instance (we hold its lock now)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.setblocking(False)
        old = os.umask(0o177)  # the socket file is the user's alone (0600): no one else connects
        try:
            server.bind(path)
            server.listen(4)
        except OSError as exc:
            server.close()
            log.warning("cannot listen for second launches: %s", exc)
            return True
        finally:
            os.umask(old)
        self._server, self._path = server, path
        self._watch(server, self._on_connection)
        return True

    def owner_pid(self) -> int:
        # PySide6 6.10 returns (ok, pid, host, app), 6.11 (pid, host, app) with pid 0 for none.
        info: tuple[object, ...] = tuple(self._lock.getLockInfo())
        if len(info) == 4:
            return _as_pid(info[1]) if info[0] else 0
        return _as_pid(info[0]) if info else 0

    def release(self) -> None:
        for sock, notifier in self._notifiers.values():
            notifier.setEnabled(False)
            sock.close()
        self._notifiers.clear()
        if self._server is not None:
            self._server = None
            with contextlib.suppress(OSError):
                os.unlink(self._path)
        if self._qt_server is not None:  # pragma: no cover - Windows
            self._qt_server.close()
            self._qt_server = None
        self._lock.unlock()

    def _watch(self, sock: socket.socket, on_ready: Any) -> None:
        notifier = QSocketNotifier(sock.fileno(), QSocketNotifier.Type.Read, self)
        notifier.activated.connect(lambda *_: on_ready(sock))
        self._notifiers[sock.fileno()] = (sock, notifier)

    def _forget(self, sock: socket.socket) -> None:
        _, notifier = self._notifiers.pop(sock.fileno(), (sock, None))
        if notifier is not None:
            notifier.setEnabled(False)
            notifier.deleteLater()
        sock.close()

    def _on_connection(self, server: socket.socket) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                log.warning("a second launch could not be heard: %s", exc)
                return
            conn.setblocking(False)
            self._watch(conn, self._on_ready)

    def _on_ready(self, conn: socket.socket) -> None:
        try:
            data = conn.recv(64)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if data.startswith(ACTIVATE.strip()):
            self._activate()
        self._forget(conn)  # one message per connection; EOF or anything else ends it too

    def _activate(self) -> None:
        log.info("a second launch on this data dir: raising the window")
        self.activation_requested.emit()

    def _listen_qt(self) -> None:  # pragma: no cover - exercised on Windows only
        from PySide6.QtNetwork import QLocalServer

        name = server_name(self._data_dir)
        QLocalServer.removeServer(name)  # a socket a killed instance left behind
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not server.listen(name):
            log.warning("cannot listen for second launches: %s", server.errorString())
            return

        def on_connection() -> None:
            while (sock := server.nextPendingConnection()) is not None:
                sock.readyRead.connect(lambda s=sock: on_ready(s))
                sock.disconnected.connect(sock.deleteLater)

        def on_ready(sock: Any) -> None:
            if bytes(sock.readAll().data()).startswith(ACTIVATE.strip()):
                self._activate()
            sock.disconnectFromServer()

        server.newConnection.connect(on_connection)
        self._qt_server = server


def ask_running_instance(data_dir: Path) -> bool:
    """From a second launch: ask the running app to raise its window; True when it was told."""
    if not UNIX:  # pragma: no cover - exercised on Windows only
        return _ask_qt(data_dir)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_MS / 1000)
    try:
        sock.connect(socket_path(data_dir))
        sock.sendall(ACTIVATE)
    except OSError:
        return False
    finally:
        sock.close()
    return True


def _ask_qt(data_dir: Path) -> bool:  # pragma: no cover - exercised on Windows only
    from PySide6.QtNetwork import QLocalSocket

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
