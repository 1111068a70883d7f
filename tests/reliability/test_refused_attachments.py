"""Refused attachments never ride along with a later prompt (issue 25, item 2), on the real
embedded gateway child with real files.

The gateway takes at most MAX_ATTACHMENTS per turn and inlines a text file of at most
MAX_INLINE_TEXT_BYTES; the app accepts files up to MAX_FILE_BYTES. A prompt the gateway would
refuse is refused before anything is staged, and whatever a refused submit did stage is
cleared: the next prompt's turn carries its own attachments only (the gateway's history row
of that prompt lists what its turn carried).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from desktop.common.clock import AsyncioClock
from desktop.common.limits import MAX_ATTACHMENTS, MAX_INLINE_TEXT_BYTES
from desktop.core.chats.router import SessionRouter
from desktop.core.delivery.outbox import Outbox
from desktop.core.delivery.port import SupervisorPort
from desktop.core.disk.attachments import AttachmentError, AttachmentStore
from desktop.core.disk.store import OutboxEntry, Store
from desktop.core.link.supervisor import ConnectionSupervisor
from desktop.core.models import Attachment, DeliveryState
from tests.reliability.conftest import RecordFigure
from tests.support.embedded_stack import online_embedded
from tests.support.waiting import wait_notified

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


class RecordingPort(SupervisorPort):
    """The app's port, recording each method it calls (what reached the wire)."""

    def __init__(self, sup: ConnectionSupervisor, router: SessionRouter) -> None:
        super().__init__(sup, router)
        self.methods: list[str] = []

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> Any:
        self.methods.append(method)
        return await super().call(method, params, timeout=timeout)


@dataclass
class Stack:
    sup: ConnectionSupervisor
    router: SessionRouter
    store: Store
    outbox: Outbox
    port: RecordingPort
    files: AttachmentStore
    restored: list[OutboxEntry] = field(default_factory=list)

    async def prompt(self, key: str, text: str, atts: tuple[Attachment, ...] = ()) -> OutboxEntry:
        """Submit and wait until it is settled (delivered, or given back)."""
        runtime = self.router.runtime_id(key) or ""
        entry = self.outbox.submit("embedded", key, runtime, text, atts)
        await wait_notified(
            lambda: self.store.outbox_get(entry.submission_ref) is None,
            [self.outbox.on_removed, self.outbox.on_state],
            f"{text!r} settled",
        )
        return entry

    async def carried(self, key: str, text: str) -> list[str] | None:
        """The file names the gateway's turn of `text` carried (None: no such prompt ran)."""
        runtime = self.router.runtime_id(key)
        history = await self.sup.call("session.history", {"session_id": runtime})
        for row in history.get("messages", []):
            if row.get("role") == "user" and row.get("text") == text:
                return [a.get("filename") for a in row.get("attachments") or []]
        return None


@asynccontextmanager
async def stack(tmp_path: Path) -> AsyncIterator[tuple[Stack, str]]:
    async with online_embedded(tmp_path) as (sup, router):
        store = Store(tmp_path / "client.db")
        port = RecordingPort(sup, router)
        outbox = Outbox(store, {"embedded": port}.get, AsyncioClock(), call_timeout=20)
        s = Stack(sup, router, store, outbox, port, AttachmentStore(tmp_path / "data"))
        outbox.on_restore(lambda e: bool(s.restored.append(e)) or True)
        key = await router.create(title="attachments")
        store.upsert_session("embedded", key, runtime_id=router.runtime_id(key) or "")
        try:
            yield s, key
        finally:
            await outbox.aclose()
            store.close()


def picture(tmp: Path, n: int) -> Path:
    path = tmp / f"shot-{n}.png"
    path.write_bytes(PNG + bytes([n]))  # each a different file (the store is by content)
    return path


async def test_a_refused_attachment_leaves_nothing_staged_for_the_next_prompt(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    async with stack(tmp_path) as (s, key):
        shot = s.files.add(picture(tmp_path, 1))
        notes = tmp_path / "notes.txt"
        notes.write_text("short notes\n", "utf-8")
        # A name the gateway refuses (over 255 characters): the client does not pre-check it,
        # so the picture before it is staged when the gateway says no.
        odd = s.files.add(notes, "n" * 300 + ".txt")
        refused = await s.prompt(key, "look at these", (shot, odd))
        assert [e.text for e in s.restored] == ["look at these"]  # back in the composer
        assert s.restored[0].state is DeliveryState.FAILED
        assert "255" in s.restored[0].error
        await s.prompt(key, "just text now")
        carried = await s.carried(key, "just text now")
        ran = await s.carried(key, refused.text)
        record_figure(
            "25-2a",
            "a prompt whose second attachment the gateway refuses comes back to the composer; "
            "the picture staged before it does not ride along with the next (text-only) prompt",
            f"restored {[e.text for e in s.restored]}, next prompt carried {carried}, refused "
            f"prompt ran {ran is not None}",
            carried == [] and ran is None,
        )
        assert "attachments.clear" in s.port.methods


async def test_an_eleventh_attachment_is_refused_before_anything_is_staged(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    async with stack(tmp_path) as (s, key):
        shots = tuple(s.files.add(picture(tmp_path, n)) for n in range(MAX_ATTACHMENTS + 1))
        await s.prompt(key, "eleven pictures", shots)
        (back,) = s.restored
        staged = s.port.methods.count("image.attach_bytes")
        await s.prompt(key, "and now a question")
        carried = await s.carried(key, "and now a question")
        ten = await s.prompt(key, "ten pictures", shots[:MAX_ATTACHMENTS])
        ten_carried = await s.carried(key, ten.text) or []
        record_figure(
            "25-2b",
            "a prompt with 11 attachments is refused with the limit before any is staged; the "
            "next prompt carries none; 10 go as one turn",
            f"reason {back.error!r}, staged {staged}, next prompt carried {len(carried or [])}, "
            f"ten carried {len(ten_carried)}",
            back.error == f"a message can carry at most {MAX_ATTACHMENTS} attachments"
            and staged == 0
            and carried == []
            and ten_carried == [a.filename for a in shots[:MAX_ATTACHMENTS]],
        )


async def test_a_text_file_over_the_inline_limit_is_refused_with_its_reason(
    tmp_path: Path, record_figure: RecordFigure
) -> None:
    big = tmp_path / "log.txt"
    big.write_text("a line of the log\n" * (MAX_INLINE_TEXT_BYTES // 18 + 100), "utf-8")
    async with stack(tmp_path) as (s, key):
        # The composer's attach step (AttachmentStore.add) refuses it, naming the limit.
        with pytest.raises(AttachmentError, match=r"text files can be at most 256 KiB"):
            s.files.add(big)
        # A binary file of the same size is fine (the gateway does not inline it).
        blob = tmp_path / "data.bin"
        blob.write_bytes(b"\x00\x01" * (MAX_INLINE_TEXT_BYTES // 2 + 100))
        assert s.files.add(blob).size > MAX_INLINE_TEXT_BYTES
        # One already queued (kept from before this check): refused before staging anything.
        shot = s.files.add(picture(tmp_path, 1))
        unchecked = AttachmentStore(tmp_path / "data", max_text_bytes=10 * MAX_INLINE_TEXT_BYTES)
        queued = unchecked.add(big)
        await s.prompt(key, "read my log", (shot, queued))
        (back,) = s.restored
        staged = s.port.methods.count("image.attach_bytes")
        await s.prompt(key, "thanks")
        carried = await s.carried(key, "thanks")
        record_figure(
            "25-2c",
            "a text file over the gateway's 256 KiB inline limit is refused when attached, "
            "with the reason; one already queued is refused before the picture beside it is "
            "staged; the next prompt carries nothing",
            f"size {queued.size // 1024} KiB, reason {back.error!r}, staged {staged}, next "
            f"prompt carried {carried}",
            "text files can be at most 256 KiB" in back.error and staged == 0 and carried == [],
        )
