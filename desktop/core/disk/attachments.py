"""Attachments copied into the data dir by content hash, atomically, with sniffing and limits."""

from __future__ import annotations

import contextlib
import hashlib
import mimetypes
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from desktop.common.atomic import write_atomic
from desktop.common.limits import (
    MAX_FILE_BYTES,
    MAX_IMAGE_BYTES,
    MAX_INLINE_TEXT_BYTES,
    MIB,
    TextSniffer,
)
from desktop.core.disk.store import ATTACHMENTS_DIR, Store, blob_path
from desktop.core.errors import HermesQtError
from desktop.core.models import Attachment

CHUNK = 256 * 1024
# Images the gateway can stage with image.attach_bytes; anything else is a "file".
IMAGE_MIMES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


class AttachmentError(HermesQtError):
    """An attachment cannot be added or read (missing, too large, unreadable)."""

    retryable = False


def sniff_mime(head: bytes, filename: str) -> str:
    """Magic bytes for the image types we send as images, else a guess from the name."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    guessed, _ = mimetypes.guess_type(filename)
    if guessed in IMAGE_MIMES:
        # The name says image but the bytes do not: don't let the gateway decode it as one.
        return "application/octet-stream"
    return guessed or "application/octet-stream"


def is_image(att: Attachment) -> bool:
    return att.mime in IMAGE_MIMES


class AttachmentStore:
    """Content-addressed copies under `<data_dir>/attachments/<sha[:2]>/<sha>`.

    A copy is written to a temp file, fsynced and renamed, so a crash leaves either no file or a
    whole one; the same content is stored once. Deleting the user's original later is harmless.
    """

    def __init__(
        self,
        data_dir: str | Path,
        *,
        store: Store | None = None,
        # The embedded gateway's own limits: what it would refuse is refused here, at once.
        max_image_bytes: int = MAX_IMAGE_BYTES,
        max_file_bytes: int = MAX_FILE_BYTES,
        max_text_bytes: int = MAX_INLINE_TEXT_BYTES,
    ) -> None:
        self.root = Path(data_dir) / ATTACHMENTS_DIR
        self._store = store
        self.max_image_bytes = max_image_bytes
        self.max_file_bytes = max_file_bytes
        # A text file is inlined into the prompt by the gateway, which takes less of it.
        self.max_text_bytes = max_text_bytes

    def path_for(self, sha256: str) -> Path:
        return blob_path(self.root, sha256)

    def add(self, source: str | Path | bytes, filename: str | None = None) -> Attachment:
        """Copy `source` (a path or the bytes themselves) in; return its Attachment."""
        if isinstance(source, bytes):
            name = filename or "attachment"
            return self._ingest(_chunks_of(source), name, len(source))
        path = Path(source)
        name = filename or path.name
        try:
            size = path.stat().st_size
            with path.open("rb") as fh:
                return self._ingest(_chunks_from(fh), name, size)
        except FileNotFoundError as exc:
            raise AttachmentError(f"{name}: the file no longer exists") from exc
        except IsADirectoryError as exc:
            raise AttachmentError(f"{name}: folders cannot be attached") from exc
        except PermissionError as exc:
            raise AttachmentError(f"{name}: permission denied reading the file") from exc

    def read(self, att: Attachment) -> bytes:
        """The stored bytes of `att` (for staging it on the gateway).

        Found by hash: a path recorded before the data dir moved is only a fallback."""
        try:
            return self.path_for(att.sha256).read_bytes()
        except OSError:
            pass
        try:
            return Path(att.path).read_bytes()
        except OSError as exc:
            raise AttachmentError(f"{att.filename}: the stored copy is missing") from exc

    def gc(self, referenced: set[str] | None = None) -> list[str]:
        """Delete stored copies whose hash is not in `referenced`; return the removed hashes.

        `referenced` defaults to what the store's drafts and outbox point at. Run it when no
        composer holds an unsaved attachment (at start-up, after drafts were flushed).
        """
        if referenced is None:
            referenced = self._store.referenced_attachments() if self._store else set()
        removed: list[str] = []
        if not self.root.is_dir():
            return removed
        for bucket in self.root.iterdir():
            if not bucket.is_dir():
                if bucket.name.startswith(".incoming-"):  # left by a crash mid-copy
                    bucket.unlink()
                continue
            for item in bucket.iterdir():
                if item.name in referenced:
                    continue
                with contextlib.suppress(FileNotFoundError):
                    item.unlink()
                if not item.name.startswith("."):
                    removed.append(item.name)
            with contextlib.suppress(OSError):
                bucket.rmdir()  # only succeeds when empty
        if self._store is not None and removed:
            self._store.forget_attachments(removed)
        return sorted(removed)

    def _limit_for(self, mime: str) -> int:
        return self.max_image_bytes if mime in IMAGE_MIMES else self.max_file_bytes

    def _too_big(self, name: str, mime: str, size: int) -> AttachmentError:
        kind = "images" if mime in IMAGE_MIMES else "files"
        limit = self._limit_for(mime) / MIB
        return AttachmentError(
            f"{name} is {size / MIB:.1f} MiB; {kind} can be at most {limit:g} MiB"
        )

    def _ingest(self, chunks: Iterator[bytes], name: str, size_hint: int) -> Attachment:
        first = next(chunks, b"")
        mime = sniff_mime(first, name)
        limit = self._limit_for(mime)
        if size_hint > limit:
            raise self._too_big(name, mime, size_hint)
        self.root.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        size = 0
        # Whether the gateway will take it for text (UTF-8, no NUL, as limits.TextSniffer says),
        # followed chunk by chunk; only a file over the text limit needs the answer.
        text = TextSniffer() if mime not in IMAGE_MIMES else None
        fd, tmp_name = tempfile.mkstemp(prefix=".incoming-", dir=self.root)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in _prepend(first, chunks):
                    size += len(chunk)
                    if size > limit:  # the file grew while we copied it
                        raise self._too_big(name, mime, size)
                    digest.update(chunk)
                    if text is not None:
                        text.feed(chunk)
                    out.write(chunk)
                if text is not None and size > self.max_text_bytes and text.done():
                    raise AttachmentError(
                        f"{name} is a text file of {size / 1024:.0f} KiB; text files can be "
                        f"at most {self.max_text_bytes // 1024} KiB (the gateway puts them "
                        "into the message)"
                    )
                out.flush()
                os.fsync(out.fileno())
            sha = digest.hexdigest()
            final = self.path_for(sha)
            final.parent.mkdir(exist_ok=True)
            if final.exists():
                tmp.unlink()
            else:
                os.replace(tmp, final)
                _fsync_dir(final.parent)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            raise
        att = Attachment(sha256=sha, filename=name, mime=mime, size=size, path=str(final))
        if self._store is not None:
            self._store.record_attachment(att)
        return att


def stored_bytes(att: Attachment) -> bytes | None:
    """The kept copy's bytes when they are still what was sent (the hash matches), else None.

    For showing a sent image: a copy deleted, cut short or changed on disk is "missing".
    """
    try:
        data = Path(att.path).read_bytes()
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == att.sha256 else None


def stored_copy_ok(att: Attachment) -> bool:
    """Whether the kept copy of a sent file is there, at its size (cheap: no hashing)."""
    try:
        return Path(att.path).stat().st_size == att.size
    except OSError:
        return False


def save_copy(att: Attachment, target: str | Path) -> None:
    """Write the kept copy of `att` to `target` (Save as…), whole or not at all."""
    data = stored_bytes(att)
    if data is None:
        raise AttachmentError(f"{att.filename}: the stored copy is missing")
    try:
        write_atomic(Path(target), data, mode=0o644)
    except OSError as exc:
        raise AttachmentError(f"could not write {target}: {exc.strerror or exc}") from exc


def _chunks_of(data: bytes) -> Iterator[bytes]:
    for start in range(0, len(data), CHUNK):
        yield data[start : start + CHUNK]


def _chunks_from(fh: BinaryIO) -> Iterator[bytes]:
    while chunk := fh.read(CHUNK):
        yield chunk


def _prepend(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    if first:
        yield first
    yield from rest


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
