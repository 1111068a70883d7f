"""Staged attachments on disk: a file per attachment, a byte quota, abandoned ones expire."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from desktop.gateway.sessions.attachments import AttachmentMeta, DecodedAttachment, StagedAttachment
from desktop.gateway.wire.faults import invalid_params

log = logging.getLogger(__name__)

DEFAULT_QUOTA_BYTES = 256 * 1024 * 1024
DEFAULT_TTL = 3600.0


@dataclass(slots=True)
class _Entry:
    stored_id: str
    staged_at: float
    size: int


class AttachmentSpool:
    """`root/staged/<stored session id>/<token>.bin` (+ `.json` metadata) until a turn takes it;
    then `root/turns/<token>.bin` until that turn has ended.

    Staged files survive a gateway restart (a resumed session finds them again); files of a
    session nobody has loaded for `ttl` seconds are deleted, and so is every turn file left
    over from a previous process (its turn can no longer run).
    """

    def __init__(
        self,
        root: Path,
        *,
        wall: Callable[[], float],
        quota_bytes: int = DEFAULT_QUOTA_BYTES,
        ttl: float = DEFAULT_TTL,
    ) -> None:
        self._staged = root / "staged"
        self._turns = root / "turns"
        self._wall = wall
        self.quota_bytes = quota_bytes
        self.ttl = ttl
        self._index: dict[Path, _Entry] = {}
        self._used = 0
        self._swept_at = wall()
        self._staged.mkdir(parents=True, exist_ok=True)
        self._turns.mkdir(parents=True, exist_ok=True)
        for leftover in self._turns.iterdir():
            _unlink(leftover)
        self._scan()

    @property
    def used_bytes(self) -> int:
        return self._used

    def _scan(self) -> None:
        for session_dir in self._staged.iterdir():
            for meta_path in session_dir.glob("*.json"):
                data = meta_path.with_suffix(".bin")
                try:
                    meta = json.loads(meta_path.read_text(encoding="utf-8"))
                    entry = _Entry(session_dir.name, float(meta["staged_at"]), data.stat().st_size)
                except (OSError, ValueError, KeyError, TypeError):
                    _unlink(meta_path)
                    _unlink(data)
                    continue
                self._index[data] = entry
                self._used += entry.size
            for stray in session_dir.glob("*.tmp"):
                _unlink(stray)

    def stage(
        self, stored_id: str, decoded: DecodedAttachment, live: Collection[str] = ()
    ) -> StagedAttachment:
        """Write the bytes to disk; -32602 naming the quota when the spool is full.

        When full, the oldest files of sessions not in `live` (nobody has them open) make
        room first: a resume re-stages from the client's own copies.
        """
        size = len(decoded.data)
        if self._used + size > self.quota_bytes:
            self.sweep(live)
            cold = sorted(
                (e.staged_at, p)
                for p, e in self._index.items()
                if e.stored_id not in live and p.parent != self._turns
            )
            for _, path in cold:
                if self._used + size <= self.quota_bytes:
                    break
                self._drop(path)
        if self._used + size > self.quota_bytes:
            raise invalid_params(
                f"the gateway's attachment space is full ({self.quota_bytes // 2**20} MB "
                "staged in open chats): send or clear some of them first"
            )
        directory = self._staged / stored_id
        directory.mkdir(exist_ok=True)
        token = secrets.token_hex(8)
        data_path = directory / f"{token}.bin"
        now = self._wall()
        meta = {**decoded.meta.describe(), "staged_at": now}
        try:
            _write(data_path, decoded.data)
            _write(data_path.with_suffix(".json"), json.dumps(meta).encode())
        except OSError as exc:
            _unlink(data_path)
            raise invalid_params(
                f"the gateway cannot store the attachment: {exc.strerror}"
            ) from exc
        self._index[data_path] = _Entry(stored_id, now, size)
        self._used += size
        return StagedAttachment(decoded.meta, data_path)

    def load(self, stored_id: str) -> list[StagedAttachment]:
        """What a session had staged when it was last in memory (oldest first)."""
        found = [(e.staged_at, p) for p, e in self._index.items() if e.stored_id == stored_id]
        out: list[StagedAttachment] = []
        for _, path in sorted(found):
            try:
                raw = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
                meta = AttachmentMeta(
                    filename=str(raw["filename"]),
                    kind=str(raw["kind"]),
                    mime=str(raw["mime"]),
                    size=int(raw["size"]),
                    sha256=str(raw["sha256"]),
                )
            except (OSError, ValueError, KeyError, TypeError):
                self._drop(path)
                continue
            out.append(StagedAttachment(meta, path))
        return out

    def take(self, staged: Iterable[StagedAttachment]) -> list[StagedAttachment]:
        """A turn takes these: they leave the staged set (a resume will not offer them again)."""
        taken: list[StagedAttachment] = []
        for att in staged:
            target = self._turns / att.path.name
            try:
                os.replace(att.path, target)
            except OSError:
                log.warning("a staged attachment's file is missing (%s)", att.meta.kind)
                self._drop(att.path)
                continue
            _unlink(att.path.with_suffix(".json"))
            entry = self._index.pop(att.path, None)
            if entry is not None:
                self._index[target] = entry
            taken.append(StagedAttachment(att.meta, target))
        return taken

    def release(self, attachments: Iterable[StagedAttachment]) -> None:
        """Delete the files (a turn ended with them, or they were cleared)."""
        for att in attachments:
            self._drop(att.path)

    def sweep(self, live: Collection[str]) -> int:
        """Delete staged files older than the TTL of sessions not in `live`; how many went."""
        now = self._wall()
        self._swept_at = now
        old = [
            p
            for p, e in self._index.items()
            if e.stored_id not in live and now - e.staged_at >= self.ttl and p.parent != self._turns
        ]
        for path in old:
            self._drop(path)
        return len(old)

    def sweep_due(self) -> bool:
        return self._wall() - self._swept_at >= self.ttl / 4

    def _drop(self, path: Path) -> None:
        entry = self._index.pop(path, None)
        if entry is not None:
            self._used -= entry.size
        _unlink(path)
        _unlink(path.with_suffix(".json"))
        if path.parent != self._turns:
            with contextlib.suppress(OSError):
                path.parent.rmdir()  # only once empty


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise


def _unlink(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
