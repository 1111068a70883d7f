"""Attachments for a session's next turn: decoding, size limits, and how the model sees them."""

from __future__ import annotations

import base64
import binascii
import hashlib
import mimetypes
from dataclasses import dataclass
from pathlib import Path

from desktop.common.limits import (
    MAX_ATTACHMENTS,
    MAX_FILE_BYTES,
    MAX_IMAGE_BYTES,
    MAX_INLINE_TEXT_BYTES,
    is_inline_text,
)
from desktop.gateway.wire.faults import invalid_params
from desktop.gateway.wire.text import scrub

# The client checks the same limits before staging (one source: desktop/common/limits.py).
MAX_STAGED = MAX_ATTACHMENTS
_IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/webp")


@dataclass(frozen=True, slots=True)
class AttachmentMeta:
    filename: str
    kind: str  # "image" | "text" | "binary"
    mime: str
    size: int
    sha256: str

    def describe(self) -> dict[str, object]:
        """Metadata safe to persist and show: never the bytes."""
        return {
            "filename": self.filename,
            "kind": self.kind,
            "mime": self.mime,
            "size": self.size,
            "sha256": self.sha256,
        }


@dataclass(frozen=True, slots=True)
class DecodedAttachment:
    """An attach request's bytes, in memory only until the spool writes them to disk."""

    meta: AttachmentMeta
    data: bytes


@dataclass(frozen=True, slots=True)
class StagedAttachment:
    """A staged attachment: its metadata in memory, its bytes in a file of the spool."""

    meta: AttachmentMeta
    path: Path

    def describe(self) -> dict[str, object]:
        return self.meta.describe()

    @property
    def kind(self) -> str:
        return self.meta.kind

    def read(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except OSError:
            return None

    def data_url(self) -> str | None:
        data = self.read()
        if data is None:
            return None
        return f"data:{self.meta.mime};base64,{base64.b64encode(data).decode('ascii')}"

    def inline_text(self) -> str:
        """How a non-image file (or an image whose file is gone) appears in the prompt."""
        m = self.meta
        if m.kind == "binary":
            return f"[attached file: {m.filename} ({m.mime}, {m.size} bytes, not shown)]"
        data = self.read() if m.kind == "text" else None
        if data is None:
            return f"[attached file: {m.filename} (no longer available on the gateway)]"
        body = data.decode("utf-8", "replace")
        return f"[attached file: {m.filename}]\n```\n{body}\n```"


def decode_attachment(
    content_base64: object, filename: object, *, image: bool
) -> DecodedAttachment:
    """Validate and decode one attach request; raises -32602 with a clear message."""
    if not isinstance(filename, str) or not filename.strip() or len(filename) > 255:
        raise invalid_params("filename must be a non-empty string of at most 255 characters")
    if not isinstance(content_base64, str):
        raise invalid_params("content_base64 must be a string")
    limit = MAX_IMAGE_BYTES if image else MAX_FILE_BYTES
    if len(content_base64) > (limit * 4) // 3 + 8:
        raise invalid_params(f"attachment too large (limit {limit} bytes)")
    try:
        data = base64.b64decode(content_base64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise invalid_params("content_base64 is not valid base64") from exc
    if len(data) > limit:
        raise invalid_params(f"attachment too large (limit {limit} bytes)")
    mime = mimetypes.guess_type(filename)[0] or "application/octet-stream"
    if image:
        sniffed = mime if mime in _IMAGE_MIMES else _sniff_image(data)
        if sniffed is None:
            raise invalid_params("not a supported image (png, jpeg, gif, webp)")
        mime = sniffed
        kind = "image"
    else:
        kind = "text" if is_inline_text(data) else "binary"
        if kind == "text" and len(data) > MAX_INLINE_TEXT_BYTES:
            raise invalid_params(f"text file too large to inline (limit {MAX_INLINE_TEXT_BYTES})")
    meta = AttachmentMeta(
        filename=scrub(filename.strip()),
        kind=kind,
        mime=mime,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )
    return DecodedAttachment(meta, data)


def _sniff_image(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None
