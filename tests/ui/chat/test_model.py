"""The chat model coalesces streaming deltas to one update per paint and idles afterwards."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QTimer

from desktop.ui.chat.model import FRAME_MS, MESSAGE_ROLE, MessageListModel
from tests.ui.fakes import assistant, user


def test_many_deltas_make_few_row_updates_and_exact_final_text(qtbot: Any) -> None:
    model = MessageListModel()
    model.reset([user("u1", "hi")])
    reply = assistant("a1", "", streaming=True)
    model.upsert(reply)
    model.flush()  # the started reply is added with the next batch
    changes: list[int] = []
    model.dataChanged.connect(lambda tl, br, roles=(): changes.append(tl.row()))
    words = [f"w{i} " for i in range(300)]
    with qtbot.wait_signal(model.flushed, timeout=5000):
        for w in words:
            reply.text += w
            model.upsert(reply)
    # 300 deltas inside one frame: published as one change of the one row that changed.
    assert changes == [1]
    reply.streaming = False
    with qtbot.wait_signal(model.flushed):
        model.upsert(reply)
    assert model.index(1).data(MESSAGE_ROLE).text == "".join(words)
    assert changes == [1, 1]
    assert not any(t.isActive() for t in model.findChildren(QTimer)), "frame timer left running"


def test_new_messages_appear_at_once(qtbot: Any) -> None:
    model = MessageListModel()
    with qtbot.wait_signal(model.rowsInserted, timeout=1000):
        model.upsert(user("u1", "now"))
    assert model.rowCount() == 1
    assert not any(t.isActive() for t in model.findChildren(QTimer))


def test_remove_drops_row_and_pending_update(qtbot: Any) -> None:
    model = MessageListModel()
    msg = user("u1", "x")
    model.reset([msg, user("u2", "y")])
    msg.text = "changed"
    model.upsert(msg)
    model.remove("u1")
    with qtbot.assert_not_emitted(model.dataChanged):
        model.flush()
    assert [model.message_at(r).id for r in range(model.rowCount())] == ["u2"]
    assert model.row_of("u2") == 0


def test_next_batch_follows_the_paint_not_a_clock(qtbot: Any) -> None:
    model = MessageListModel()
    reply = assistant("a1", "", streaming=True)
    model.reset([reply])
    (timer,) = model.findChildren(QTimer)
    reply.text = "one"
    model.upsert(reply)
    assert timer.isActive() and timer.interval() == 0, "a first delta goes out on the next turn"
    with qtbot.wait_signal(model.flushed):
        pass
    reply.text = "one two"
    model.upsert(reply)
    # The first batch is not painted yet: the second waits for that paint (or a whole frame).
    assert timer.isActive() and timer.interval() == FRAME_MS
    model.paint_done()
    assert timer.isActive() and timer.interval() == 0, "painted: the next batch goes out at once"
    with qtbot.wait_signal(model.flushed):
        pass
    model.paint_done()
    assert model.index(0).data(MESSAGE_ROLE).text == "one two"
    assert not timer.isActive(), "nothing pending: no timer runs"


def test_batch_without_a_paint_still_goes_out_after_a_frame(qtbot: Any) -> None:
    model = MessageListModel()
    reply = assistant("a1", "x", streaming=True)
    model.reset([reply])
    changes: list[int] = []
    model.dataChanged.connect(lambda tl, br, roles=(): changes.append(tl.row()))
    for text in ("xy", "xyz"):
        reply.text = text
        with qtbot.wait_signal(model.flushed, timeout=1000):
            model.upsert(reply)
    assert changes == [0, 0], "a view that never paints does not hold updates back"


def test_a_screen_reader_hears_every_line_a_bubble_draws_besides_its_text(qtbot: Any) -> None:
    # The state line of a reply that did not complete, a prompt's attachments and the files a
    # turn changed are drawn in the bubble; a screen reader must hear them too, not only see.
    from PySide6.QtCore import Qt

    from desktop.core.chats.reply_state import FAILED
    from desktop.core.models import Attachment, ToolCall

    prompt = user("u1", "Fix **the** file")
    prompt.attachments = (Attachment("ab" * 32, "notes.txt", "text/plain", 5, "/x/notes.txt"),)
    failed = assistant("a1", "Partial")
    failed.status, failed.cause = FAILED, "OpenAI refused the key"
    edit = ToolCall("t1", "write_file", done=True)
    edit.extra["changes"] = [{"path": "a.py", "diff": "+x"}, {"path": "b.py", "diff": "-y"}]
    changed = assistant("a2", "Done.")
    changed.tools = [edit]
    model = MessageListModel()
    model.reset([prompt, failed, changed])
    said = [str(model.index(r).data(Qt.ItemDataRole.AccessibleTextRole)) for r in range(3)]
    assert said[0] == "user: Fix the file. Attached: notes.txt"
    assert said[1] == "assistant: Partial. Failed: OpenAI refused the key"
    assert said[2] == "assistant: Done. 2 files changed"
