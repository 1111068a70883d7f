"""A conversation written out as Markdown (to read) or JSON (everything the store keeps)."""

from __future__ import annotations

import dataclasses
import json
import time
from enum import Enum
from pathlib import Path
from typing import Any

from desktop.common.atomic import write_atomic
from desktop.core.disk.store import CachedMessage, SentAttachments, Store, prompt_key
from desktop.core.errors import StorageError
from desktop.core.keys import draft_key
from desktop.core.models import ReplyVersion

FORMAT_VERSION = 1
_ROLE_NAMES = {"user": "You", "assistant": "Assistant", "system": "System", "tool": "Tool"}


class ExportError(StorageError):
    """A conversation could not be exported (unknown chat, unwritable file)."""


def _plain(value: Any) -> Any:
    """Dataclasses, enums and tuples as JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def conversation_json(store: Store, profile_id: str, key: str) -> dict[str, Any]:
    """The session row, every cached message (thinking, tools, status...), its draft and
    the prompts still in its outbox: all the store keeps of one conversation."""
    record = store.session(profile_id, key)
    if record is None:
        raise ExportError(f"no chat {key!r} to export", retryable=False)
    draft = store.draft(draft_key(profile_id, key))
    earlier = _earlier_versions(store, profile_id, key)
    return {
        "format": "hermes-qt.conversation",
        "version": FORMAT_VERSION,
        "exported_at": time.time(),
        "session": _plain(record),
        "messages": [
            _with_versions(_with_files(_plain(m), files), earlier.get(m.idx, ()))
            for m, files in _messages(store, profile_id, key)
        ],
        "draft": _plain(draft) if draft is not None and not draft.empty else None,
        "outbox": [_plain(e) for e in store.outbox_entries(profile_id, key)],
    }


def _messages(
    store: Store, profile_id: str, key: str
) -> list[tuple[CachedMessage, SentAttachments | None]]:
    """Each cached message with the attachments recorded for its row (prompts only)."""
    sent = store.message_attachments(profile_id, key)
    out: list[tuple[CachedMessage, SentAttachments | None]] = []
    for m in store.messages(profile_id, key):
        record = sent.get(m.idx) if m.role == "user" else None
        wanted = prompt_key(record.prompt) if record is not None else ""
        if wanted and wanted not in prompt_key(m.text):
            record = None  # the row there is another prompt now
        out.append((m, record))
    return out


def _earlier_versions(
    store: Store, profile_id: str, key: str
) -> dict[int, tuple[ReplyVersion, ...]]:
    """The earlier replies kept for each prompt, by the row of the turn's last reply (the one
    the gateway's history holds)."""
    kept = store.reply_versions(profile_id, key)
    if not kept:
        return {}
    reply_of: dict[int, int] = {}  # prompt row -> the row of its turn's last reply
    prompt: int | None = None
    for m in store.messages(profile_id, key):
        if m.role == "user":
            prompt = m.idx
        elif m.role == "assistant" and prompt is not None:
            reply_of[prompt] = m.idx
    return {reply_of[p]: versions for p, versions in kept.items() if p in reply_of}


def _with_versions(message: dict[str, Any], earlier: tuple[ReplyVersion, ...]) -> dict[str, Any]:
    # Every version: the earlier ones, oldest first; the message itself is the newest.
    if earlier:
        message["versions"] = [_plain(v) for v in earlier]
    return message


def _with_files(message: dict[str, Any], files: SentAttachments | None) -> dict[str, Any]:
    # Described, never embedded: the bytes stay in the data dir, named by their hash.
    message["attachments"] = [
        {"name": a.filename, "size": a.size, "mime": a.mime, "sha256": a.sha256}
        for a in (files.attachments if files else ())
    ]
    return message


def _stamp(when: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(when)) if when else ""


def _message_markdown(
    m: CachedMessage, files: SentAttachments | None = None, earlier: int = 0
) -> str:
    who = _ROLE_NAMES.get(m.role, m.role.title())
    head = f"### {who}" + (f" · {_stamp(m.created_at)}" if m.created_at else "")
    if m.status not in ("complete", ""):
        head += f" ({m.status})"
    parts = [head]
    if m.thinking:
        quoted = "\n".join(f"> {line}" if line else ">" for line in m.thinking.splitlines())
        parts.append(f"> **Thinking**\n>\n{quoted}")
    for tool in m.extra.get("tools") or []:
        if isinstance(tool, dict):
            parts.append(f"*Tool: {tool.get('name') or 'tool'}*")
    parts.append(m.text or ("" if files else "*(no text)*"))
    for a in files.attachments if files else ():
        parts.append(f"📎 {_md_escape(a.filename)} ({a.mime}, {_size(a.size)})")
    if earlier:
        total = earlier + 1
        parts.append(
            f"*Version {total} of {total}: {earlier} earlier "
            f"{'reply' if earlier == 1 else 'replies'} kept (every version is in the JSON export)*"
        )
    return "\n\n".join(p for p in parts if p)


def _md_escape(name: str) -> str:
    return "".join(f"\\{c}" if c in "\\`*_[]<>#|" else c for c in name)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    return f"{n / 1024:.1f} KiB" if n < 1024 * 1024 else f"{n / (1024 * 1024):.1f} MiB"


def conversation_markdown(store: Store, profile_id: str, key: str) -> str:
    """The conversation as a Markdown document: a title, then each message under its author."""
    record = store.session(profile_id, key)
    if record is None:
        raise ExportError(f"no chat {key!r} to export", retryable=False)
    title = record.title or "Chat"
    lines = [f"# {title}", ""]
    if record.updated_at:
        lines += [f"*Exported from hermes-qt · last active {_stamp(record.updated_at)}*", ""]
    earlier = _earlier_versions(store, profile_id, key)
    body = [
        _message_markdown(m, files, len(earlier.get(m.idx, ())))
        for m, files in _messages(store, profile_id, key)
    ]
    return "\n".join(lines) + "\n" + "\n\n---\n\n".join(body) + "\n"


def export_conversation(store: Store, profile_id: str, key: str, path: Path) -> None:
    """Write a conversation to `path`: JSON for a .json name, Markdown otherwise."""
    if path.suffix.lower() == ".json":
        text = json.dumps(conversation_json(store, profile_id, key), indent=2, ensure_ascii=False)
    else:
        text = conversation_markdown(store, profile_id, key)
    try:
        write_atomic(path, text, mode=0o644)
    except OSError as exc:
        raise ExportError(
            f"could not write {path}: {exc.strerror or exc}", retryable=False
        ) from exc
