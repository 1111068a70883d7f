"""The files a reply's tools changed, from Hermes' tool.complete and rollback.diff texts."""

from __future__ import annotations

from desktop.core.chats.file_changes import changes_of, git_sections, record_tool_change, summary
from desktop.core.models import ChatMessage, Role, ToolCall

# As Hermes 0.19.0 sent it for a write_file (ANSI colours and all).
INLINE = (
    "  \u250a review diff\n"
    "\x1b[38;2;218;165;32ma//tmp/w/notes.txt \u2192 b//tmp/w/notes.txt\x1b[0m\n"
    "\x1b[38;2;139;134;130m@@ -1 +1 @@\x1b[0m\n"
    "\x1b[38;2;255;255;255;48;2;119;20;20m-old line\x1b[0m\n"
    "\x1b[38;2;255;255;255;48;2;19;87;20m+new line\x1b[0m"
)
GIT = (
    "diff --git a/notes.txt b/notes.txt\nindex 0906fba..86ba82a 100644\n"
    "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-old line\n+new line\n"
    "diff --git a/src/b.py b/src/b.py\n--- a/src/b.py\n+++ b/src/b.py\n@@ -2 +2 @@\n-x\n+y"
)


def _reply(*payloads: dict[str, object]) -> ChatMessage:
    msg = ChatMessage(id="r", role=Role.ASSISTANT)
    for n, payload in enumerate(payloads):
        call = ToolCall(id=str(n), name=str(payload.get("name", "write_file")), done=True)
        record_tool_change(call, payload)
        msg.tools.append(call)
    return msg


def test_a_write_shows_its_file_once_with_the_hunks_and_counts() -> None:
    args = {"path": "/tmp/w/notes.txt", "content": "new line\n"}
    result = {"files_modified": ["/tmp/w/notes.txt"]}
    msg = _reply(
        {"args": args, "result": result, "inline_diff": INLINE},
        {"name": "read_file", "args": {"path": "/tmp/w/other.txt"}, "result": {"content": "x"}},
    )
    [change] = changes_of(msg)
    assert change.path == "/tmp/w/notes.txt"
    assert change.diff == "@@ -1 +1 @@\n-old line\n+new line"
    assert (change.added, change.removed) == (1, 1)
    assert summary(changes_of(msg)) == "1 file changed"


def test_a_failed_write_and_a_history_row_of_one_change_nothing() -> None:
    refused = {"args": {"path": "/w/a"}, "result": {"error": "Refusing to overwrite /w/a"}}
    # 0.22's history row keeps the result as `content`.
    row = {"name": "write_file", "args": {"path": "/w/a"}, "content": '{"error": "Refusing"}'}
    assert changes_of(_reply(refused, row)) == ()
    # A history row of a write that worked (0.20.1 keeps args): the file, no diff.
    ok = {"name": "write_file", "args": {"path": "/w/a"}, "context": "/w/a"}
    assert [(c.path, c.diff) for c in changes_of(_reply(ok))] == [("/w/a", "")]


def test_a_checkpoint_diff_splits_per_file() -> None:
    sections = git_sections(GIT)
    assert list(sections) == ["notes.txt", "src/b.py"]
    assert sections["notes.txt"] == "@@ -1 +1 @@\n-old line\n+new line"
    assert summary(changes_of(_reply({"args": {"path": "a"}}, {"args": {"path": "b"}}))) == (
        "2 files changed"
    )
