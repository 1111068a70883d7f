"""Per-profile connection epochs that only ever grow, persisted atomically across restarts."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Protocol

from desktop.common.atomic import write_atomic
from desktop.core.errors import StorageError


class EpochStore(Protocol):
    """Hands out strictly increasing connection epochs per profile.

    `next_epoch` raises StorageError when the new epoch cannot be kept (nothing handed out).
    """

    def current(self, profile_id: str) -> int: ...

    def next_epoch(self, profile_id: str) -> int: ...


class MemoryEpochStore:
    """Epochs kept in memory only (tests, throwaway profiles)."""

    def __init__(self) -> None:
        self._epochs: dict[str, int] = {}

    def current(self, profile_id: str) -> int:
        return self._epochs.get(profile_id, 0)

    def next_epoch(self, profile_id: str) -> int:
        value = self._epochs.get(profile_id, 0) + 1
        self._epochs[profile_id] = value
        return value


class FileEpochStore:
    """Epochs in a small JSON file, replaced atomically (write, fsync, rename, fsync dir).

    A value is durable before it is handed out, so a crash can skip epochs but never reuse one.
    """

    def __init__(self, path: Path) -> None:
        self._path = Path(path)
        self._lock = threading.Lock()
        self._epochs = self._load()

    @property
    def path(self) -> Path:
        return self._path

    def current(self, profile_id: str) -> int:
        with self._lock:
            return self._epochs.get(profile_id, 0)

    def next_epoch(self, profile_id: str) -> int:
        with self._lock:
            # Re-read so two stores on one file (two app instances) still never go backwards.
            on_disk = self._load().get(profile_id, 0)
            held = self._epochs.get(profile_id)
            value = max(on_disk, held or 0) + 1
            self._epochs[profile_id] = value
            try:
                self._write()
            except OSError as exc:
                # Not durable, so not handed out: after a crash it could be handed out again.
                if held is None:
                    del self._epochs[profile_id]
                else:
                    self._epochs[profile_id] = held
                reason = exc.strerror or str(exc)
                raise StorageError(f"could not save the connection epoch: {reason}") from exc
            return value

    def _load(self) -> dict[str, int]:
        try:
            raw = json.loads(self._path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            # A torn or foreign file: start from what we hold; the next write repairs it.
            return dict(getattr(self, "_epochs", {}))
        epochs = raw.get("epochs", {}) if isinstance(raw, dict) else {}
        return {str(k): int(v) for k, v in epochs.items() if isinstance(v, int) and v >= 0}

    def _write(self) -> None:
        data = json.dumps({"version": 1, "epochs": self._epochs}, sort_keys=True)
        write_atomic(self._path, data)
