"""Attachments: copied atomically by hash, deduplicated, sniffed, size-limited, collected."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from desktop.core.disk.attachments import AttachmentError, AttachmentStore, is_image
from desktop.core.disk.store import DraftRecord, Store

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
JPEG = b"\xff\xd8\xff\xe0" + b"\x01" * 64
GIF = b"GIF89a" + b"\x02" * 32
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x03" * 32


def test_added_file_is_a_private_copy_that_outlives_the_original(
    tmp_path: Path, data_dir: Path
) -> None:
    src = tmp_path / "holiday.png"
    src.write_bytes(PNG)
    atts = AttachmentStore(data_dir)
    att = atts.add(src)
    src.unlink()  # the user deletes or moves the original before sending
    assert atts.read(att) == PNG
    assert att.sha256 == hashlib.sha256(PNG).hexdigest()
    assert Path(att.path) == data_dir / "attachments" / att.sha256[:2] / att.sha256
    assert (att.filename, att.mime, att.size) == ("holiday.png", "image/png", len(PNG))
    assert not [p for p in (data_dir / "attachments").iterdir() if p.name.startswith(".")]


def test_same_content_is_stored_once(tmp_path: Path, data_dir: Path) -> None:
    atts = AttachmentStore(data_dir)
    one = atts.add(b"same bytes", "a.txt")
    (tmp_path / "b.txt").write_bytes(b"same bytes")
    two = atts.add(tmp_path / "b.txt")
    assert one.path == two.path and two.filename == "b.txt"
    stored = [p for p in (data_dir / "attachments").rglob("*") if p.is_file()]
    assert len(stored) == 1


@pytest.mark.parametrize(
    ("data", "name", "mime"),
    [
        (PNG, "x.bin", "image/png"),
        (JPEG, "photo", "image/jpeg"),
        (GIF, "anim.gif", "image/gif"),
        (WEBP, "pic.webp", "image/webp"),
        (b"plain words", "notes.txt", "text/plain"),
        (b"not an image", "fake.png", "application/octet-stream"),
    ],
)
def test_mime_comes_from_magic_bytes_first(
    data_dir: Path, data: bytes, name: str, mime: str
) -> None:
    att = AttachmentStore(data_dir).add(data, name)
    assert att.mime == mime
    assert is_image(att) == mime.startswith("image/")


def test_size_limits_are_clear_errors_and_leave_nothing_behind(
    tmp_path: Path, data_dir: Path
) -> None:
    atts = AttachmentStore(data_dir, max_image_bytes=50, max_file_bytes=100)
    with pytest.raises(AttachmentError, match=r"big\.png .*images can be at most"):
        atts.add(PNG, "big.png")
    src = tmp_path / "big.log"
    src.write_bytes(b"x" * 101)
    with pytest.raises(AttachmentError, match=r"big\.log .*files can be at most"):
        atts.add(src)
    assert atts.add(b"x" * 100, "ok.log").size == 100
    stored = [p for p in (data_dir / "attachments").rglob("*") if p.is_file()]
    assert len(stored) == 1


def test_missing_file_is_a_clear_error(tmp_path: Path, data_dir: Path) -> None:
    with pytest.raises(AttachmentError, match=r"gone\.pdf: the file no longer exists"):
        AttachmentStore(data_dir).add(tmp_path / "gone.pdf")
    with pytest.raises(AttachmentError, match="folders cannot be attached"):
        AttachmentStore(data_dir).add(tmp_path)


def test_gc_removes_only_unreferenced_copies(data_dir: Path) -> None:
    with Store(data_dir / "app.db") as store:
        atts = AttachmentStore(data_dir, store=store)
        kept = atts.add(b"in a draft", "keep.txt")
        delivered = atts.add(b"already sent", "sent.txt")
        (data_dir / "attachments" / ".incoming-crashed").write_bytes(b"partial")
        store.save_draft(DraftRecord("s1", "see file", attachments=(kept,)))
        removed = atts.gc()
        assert removed == [delivered.sha256]
        assert atts.read(kept) == b"in a draft"
        with pytest.raises(AttachmentError, match="stored copy is missing"):
            atts.read(delivered)
        assert not (data_dir / "attachments" / ".incoming-crashed").exists()
        assert [a.sha256 for a in store.attachment_rows()] == [kept.sha256]
        assert atts.gc({kept.sha256}) == []
