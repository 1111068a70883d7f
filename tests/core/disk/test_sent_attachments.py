"""Attachments of sent prompts: recorded by hash with their row, back after any restart."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from desktop.common.clock import ManualClock
from desktop.core.chats.conversation import Conversation
from desktop.core.chats.index import SessionIndex
from desktop.core.disk.attachments import AttachmentStore
from desktop.core.disk.migrations import migrate
from desktop.core.disk.store import Store
from desktop.core.models import Attachment, ChatMessage, DeliveryState, Role

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def _open(data: Path) -> tuple[Store, AttachmentStore, SessionIndex]:
    data.mkdir(parents=True, exist_ok=True)
    store = Store(data / "hermes-qt.sqlite3")
    files = AttachmentStore(data, store=store)
    return store, files, SessionIndex("p", store, ManualClock(), lambda *_: None)


def _sent_chat(index: SessionIndex, atts: tuple[Attachment, ...]) -> Conversation:
    """A chat whose prompt (row 2) was sent with `atts`, as the composer's bubble shows it."""
    conv = Conversation("s1")
    conv.messages = [
        ChatMessage("s1:0", Role.USER, "hi", delivery=DeliveryState.CONFIRMED),
        ChatMessage("s1:1", Role.ASSISTANT, "hello"),
        ChatMessage("local:r1", Role.USER, "look at these", attachments=atts),
        ChatMessage("s1:reply:1", Role.ASSISTANT, "nice picture"),
    ]
    conv.messages[2].delivery = DeliveryState.CONFIRMED
    index.cache_conversation("s1", conv)
    return conv


def _snapshot_rows() -> list[dict[str, str]]:
    # What a gateway lists after a restart: its rows name no attachment.
    return [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "look at these"},
        {"role": "assistant", "content": "nice picture"},
    ]


def test_a_sent_prompts_files_come_back_after_a_restart_and_a_snapshot(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store, files, index = _open(data)
    store.upsert_session("p", "s1", title="pics")
    image = files.add(PNG, "plot.png")
    notes = files.add(b"some notes\n", "notes.txt")
    _sent_chat(index, (image, notes))
    store.close()

    # Restart, with the data folder moved elsewhere: found by hash, not by the old path.
    moved = tmp_path / "moved"
    shutil.move(str(data), moved)
    store, files, index = _open(moved)
    cached = index.cached_messages("s1")
    prompt = next(m for m in cached if m.text == "look at these")
    assert [(a.filename, a.mime, a.size) for a in prompt.attachments] == [
        ("plot.png", "image/png", len(PNG)),
        ("notes.txt", "text/plain", 11),
    ]
    assert [Path(a.path).read_bytes() for a in prompt.attachments] == [PNG, b"some notes\n"]
    assert all(Path(a.path).is_relative_to(moved) for a in prompt.attachments)

    # The gateway's snapshot rebuilds the rows without them: the local record wins.
    conv = Conversation("s1")
    conv.seed(cached)
    conv.load_snapshot({"messages": _snapshot_rows()})
    rebuilt = next(m for m in conv.messages if m.text == "look at these")
    assert rebuilt.attachments == ()
    assert index.attach_sent("s1", conv.messages) == [rebuilt]
    assert rebuilt.text == "look at these"
    assert [a.sha256 for a in rebuilt.attachments] == [image.sha256, notes.sha256]
    # An unrelated prompt at another row gets nothing.
    assert next(m for m in conv.messages if m.text == "hi").attachments == ()
    store.close()


def test_a_record_follows_its_prompt_when_the_gateway_lists_it_further_down(
    tmp_path: Path,
) -> None:
    store, files, index = _open(tmp_path)
    store.upsert_session("p", "s1")
    image = files.add(PNG, "plot.png")
    _sent_chat(index, (image,))
    # The reply before it was two rows on the gateway (a tool call): the prompt is row 3.
    rows = _snapshot_rows()
    rows.insert(1, {"role": "tool", "content": "ran"})
    conv = Conversation("s1")
    conv.load_snapshot({"messages": rows})
    index.attach_sent("s1", conv.messages)
    prompt = next(m for m in conv.messages if m.text == "look at these")
    assert prompt.id == "s1:3" and [a.filename for a in prompt.attachments] == ["plot.png"]
    # Moved in the store too: a fresh start finds it at row 3.
    fresh = SessionIndex("p", store, ManualClock(), lambda *_: None)
    again = Conversation("s1")
    again.load_snapshot({"messages": rows})
    fresh.attach_sent("s1", again.messages)
    assert [a.filename for a in again.messages[2].attachments] == ["plot.png"]
    store.close()


def test_a_row_the_gateway_added_to_shows_the_prompt_as_sent_with_its_files(
    tmp_path: Path,
) -> None:
    # 0.20.1 keeps a sent picture in its own folder and writes where into the prompt's row.
    store, files, index = _open(tmp_path)
    store.upsert_session("p", "s1")
    image = files.add(PNG, "plot.png")
    _sent_chat(index, (image,))
    rows = _snapshot_rows()
    rows[2]["content"] = "look at these\n@image:/home/u/.hermes/images/upload_1.png"
    conv = Conversation("s1")
    conv.load_snapshot({"messages": rows})
    index.attach_sent("s1", conv.messages)
    prompt = conv.messages[2]
    assert prompt.text == "look at these"
    assert [a.filename for a in prompt.attachments] == ["plot.png"]
    store.close()


def test_identical_files_are_stored_once_and_sent_ones_survive_garbage_collection(
    tmp_path: Path,
) -> None:
    store, files, index = _open(tmp_path)
    store.upsert_session("p", "s1")
    first = files.add(PNG, "a.png")
    second = files.add(PNG, "b.png")
    assert first.sha256 == second.sha256 and first.path == second.path
    blobs = [p for p in (tmp_path / "attachments").rglob("*") if p.is_file()]
    assert blobs == [Path(first.path)]
    _sent_chat(index, (first,))
    # Start-up collects copies no draft or queued prompt points at: a sent one is kept.
    assert files.gc() == []
    assert Path(first.path).read_bytes() == PNG
    store.delete_session("p", "s1")
    assert files.gc() == [first.sha256]
    store.close()


def test_migration_4_from_v3_with_data_keeps_the_cache_and_records_attachments(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hermes-qt.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, 3)
    conn.execute("INSERT INTO sessions (profile_id, key, title) VALUES ('p', 's1', 'Old chat')")
    conn.execute(
        "INSERT INTO messages (profile_id, session_key, idx, role, text) "
        "VALUES ('p', 's1', 0, 'user', 'written before the upgrade')"
    )
    conn.close()
    with Store(path) as store:
        assert [m.text for m in store.messages("p", "s1")] == ["written before the upgrade"]
        att = Attachment("ab" * 32, "x.png", "image/png", 3, "/nowhere/x.png")
        store.put_message_attachments("p", "s1", 0, "written  before the upgrade", [att])
        record = store.message_attachments("p", "s1")[0]
        assert record.prompt == "written  before the upgrade", "kept as sent"
        # The path is where this data dir keeps that hash, never the one recorded.
        assert record.attachments[0].path == str(tmp_path / "attachments" / "ab" / ("ab" * 32))


def test_the_export_names_each_sent_file_in_json_and_in_markdown(tmp_path: Path) -> None:
    from desktop.core.disk.export import conversation_json, conversation_markdown

    store, files, index = _open(tmp_path)
    store.upsert_session("p", "s1", title="pics")
    image = files.add(PNG, "plot_1.png")
    notes = files.add(b"some notes\n", "notes.txt")
    _sent_chat(index, (image, notes))
    data = conversation_json(store, "p", "s1")
    by_text = {m["text"]: m["attachments"] for m in data["messages"]}
    assert by_text["look at these"] == [
        {"name": "plot_1.png", "size": len(PNG), "mime": "image/png", "sha256": image.sha256},
        {"name": "notes.txt", "size": 11, "mime": "text/plain", "sha256": notes.sha256},
    ]
    assert by_text["hi"] == [] and by_text["nice picture"] == []
    markdown = conversation_markdown(store, "p", "s1")
    assert "📎 plot\\_1.png (image/png, 72 bytes)" in markdown
    assert "📎 notes.txt (text/plain, 11 bytes)" in markdown
    store.close()
