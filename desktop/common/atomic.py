"""Crash-safe small-file writes: temp file, fsync, rename, fsync the directory."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str | bytes, *, mode: int = 0o600) -> None:
    """Replace `path` with `text` (UTF-8; bytes as they are) so a crash leaves either the old
    or the new file, whole.

    The file is created with `mode` (0600 by default: settings that hold secrets stay private).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8") if isinstance(text, str) else text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def keep_aside(path: Path) -> Path | None:
    """Copy a file the app could not read to `<name>.unreadable` beside it (an existing copy of
    other content becomes `.unreadable-2`, ...), so a save never rewrites away what it did not
    understand. Returns the copy, or None when there was nothing to keep or it failed."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    for n in range(1, 100):
        copy = path.with_name(f"{path.name}.unreadable" + ("" if n == 1 else f"-{n}"))
        try:
            if copy.read_bytes() == data:
                return copy
            continue
        except FileNotFoundError:
            pass
        except OSError:
            return None
        try:
            copy.write_bytes(data)
            os.chmod(copy, 0o600)
        except OSError:
            return None
        return copy
    return None
