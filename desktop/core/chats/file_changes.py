"""The files a reply's tools changed, each with its diff, read from what the gateway sent.

Hermes (0.19-0.22) adds `inline_diff` to a file tool's `tool.complete` (write_file, patch,
skill_manage): its TUI rendering, ANSI colours and a header line `a/PATH → b/PATH` per file
above unified hunks. Its `args.path` / `result.files_modified` name the files even where no
diff came (history rows of 0.20.1 keep `args`). `rollback.diff` answers a git diff
(`diff --git a/P b/P` sections, paths relative to the session's directory), split here per
file. No git on this side: only text.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from typing import Any

from desktop.core.models import ChatMessage, ToolCall

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_INLINE_HEADER = re.compile(r"^(?:a/)?(?P<old>.+?) \u2192 (?:b/)?(?P<new>.+)$")
_GIT_HEADER = re.compile(r"^diff --git a/(?P<old>.+?) b/(?P<new>.+)$")
# Tool result fields that name the files a tool wrote.
_PATH_ARGS = ("path", "file_path", "file")


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file a reply changed: its path as the tool named it, and its diff (unified hunks,
    "" when the gateway sent none)."""

    path: str
    diff: str = ""

    @property
    def added(self) -> int:
        return sum(1 for line in self.diff.splitlines() if _is_added(line))

    @property
    def removed(self) -> int:
        return sum(1 for line in self.diff.splitlines() if _is_removed(line))


def _is_added(line: str) -> bool:
    return line.startswith("+") and not line.startswith("+++")


def _is_removed(line: str) -> bool:
    return line.startswith("-") and not line.startswith("---")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def inline_sections(text: str) -> dict[str, str]:
    """A `tool.complete.inline_diff` per file: path -> its hunks (colours and the
    "┊ review diff" banner left out)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in strip_ansi(text).splitlines():
        line = raw.rstrip("\r")
        head = _INLINE_HEADER.match(line.strip()) if "\u2192" in line else None
        if head is not None and not line.startswith(("+", "-", " ", "@")):
            current = sections.setdefault(head.group("new").strip(), [])
            continue
        if current is None or "\u250a review diff" in line:
            continue
        current.append(line)
    return {path: "\n".join(lines).strip("\n") for path, lines in sections.items()}


def git_sections(text: str) -> dict[str, str]:
    """A `rollback.diff` answer's `diff` per file: relative path -> its section (from the
    `---`/`+++` lines on)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        head = _GIT_HEADER.match(line)
        if head is not None:
            current = sections.setdefault(head.group("new"), [])
            continue
        if current is not None and not line.startswith(("index ", "--- ", "+++ ")):
            current.append(line)
    return {path: "\n".join(lines).strip("\n") for path, lines in sections.items()}


def same_file(tool_path: str, relative: str) -> bool:
    """Whether a tool's path (often absolute) and a checkpoint diff's relative path name the
    same file."""
    a, b = tool_path.strip().lstrip("/"), relative.strip().lstrip("/")
    return bool(a and b) and (a == b or a.endswith("/" + b))


def record_tool_change(call: ToolCall, payload: dict[str, Any]) -> None:
    """Keep on `call` (its `extra["changes"]`, persisted with the bubble) the files a
    `tool.complete` (or a history row) says the tool changed, with their diffs."""
    if _failed(payload):
        return
    diffs: dict[str, str] = {}
    inline = payload.get("inline_diff")
    if isinstance(inline, str) and inline.strip():
        diffs = inline_sections(inline)
    paths: list[str] = list(diffs)
    result = payload.get("result")
    if isinstance(result, dict) and isinstance(result.get("files_modified"), list):
        paths += [p for p in result["files_modified"] if isinstance(p, str)]
    args = payload.get("args")
    if (diffs or paths or call.name in ("write_file", "patch")) and isinstance(args, dict):
        paths += [args[k] for k in _PATH_ARGS if isinstance(args.get(k), str)]
    changes: dict[str, str] = {}
    for path in paths:
        path = path.strip()
        if not path:
            continue
        known = next((p for p in changes if same_file(p, path) or same_file(path, p)), None)
        if known is None:
            diff = diffs.get(path, "")
            changes[path] = diff or next(
                (d for p, d in diffs.items() if same_file(p, path) or same_file(path, p)), ""
            )
    if changes:
        call.extra["changes"] = [{"path": p, "diff": d} for p, d in changes.items()]


def _failed(payload: dict[str, Any]) -> bool:
    """A tool whose result says it failed (a history row keeps the result as `content`)."""
    result = payload.get("result")
    if isinstance(payload.get("content"), str):
        with contextlib.suppress(ValueError):
            result = json.loads(payload["content"])
    return isinstance(result, dict) and bool(result.get("error"))


def changes_of(msg: ChatMessage) -> tuple[FileChange, ...]:
    """Every file a reply's tools changed, once each (a file changed twice shows both diffs,
    in order)."""
    merged: dict[str, list[str]] = {}
    for tool in msg.tools:
        for raw in tool.extra.get("changes") or ():
            if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
                continue
            path = raw["path"]
            known = next((p for p in merged if same_file(p, path) or same_file(path, p)), path)
            diff = raw.get("diff")
            parts = merged.setdefault(known, [])
            if isinstance(diff, str) and diff:
                parts.append(diff)
    return tuple(FileChange(p, "\n".join(d)) for p, d in merged.items())


def summary(changes: tuple[FileChange, ...]) -> str:
    """The card's line: "1 file changed" / "3 files changed"."""
    n = len(changes)
    return f"{n} file changed" if n == 1 else f"{n} files changed"
