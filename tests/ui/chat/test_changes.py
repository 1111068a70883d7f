"""A reply's "N files changed" card and its Review and restore dialog, in the real window.

The card opens to a row per file, a file to its diff; Review and restore shows the checkpoint's
diff before Restore this file can be pressed, Restore to here asks first and is offered on the
last turn only, a gateway without checkpoints hides both with its reason, a refusal is shown.
"""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt

from desktop.core.models import Checkpoint, RollbackState
from desktop.core.profile.agent.rollback import BUSY, CHECKPOINTS_OFF
from desktop.ui.chat.restore_dialog import NEW_FILE, NOT_LAST, RestoreDialog
from tests.ui.changes_screenshots import CHECKPOINT, GIT_DIFF, reply
from tests.ui.fakes import FakeBackend, assistant, user

LISTED = RollbackState(True, "", (Checkpoint(CHECKPOINT, 1.7e9 + 2),), loaded=True)


def _click(qtbot: Any, win: Any, message_id: str, kind: str, n: int = 0) -> None:
    view = win.chat_view
    row = view.chat_model.row_of(message_id)
    index = view.chat_model.index(row)
    view.scrollTo(index)
    at = view.bubbles.zone_center(index, kind, n)
    assert at is not None, f"the bubble shows {kind} {n}"
    point = (at + view.visualRect(index).topLeft().toPointF()).toPoint()
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)


def _open(qtbot: Any, make_window: Any, backend: FakeBackend, *later: Any) -> Any:
    backend.messages = {"s1": [user("u1", "fix the dates"), reply(), *later]}
    win = make_window(backend)
    win.open_session("s1")
    win.chat_view.chat_model.flush()
    return win


def _layout(win: Any) -> Any:
    view = win.chat_view
    return view.bubbles.layout_for(view.chat_model.index(view.chat_model.row_of("a1")))


def _dialog(qtbot: Any, win: Any) -> RestoreDialog:
    _click(qtbot, win, "a1", "changes")
    win.chat_view.chat_model.flush()
    _click(qtbot, win, "a1", "restore_changes")
    dialog = win.chat_view.findChild(RestoreDialog)
    assert dialog is not None and dialog.isVisible()
    return dialog


def test_the_card_opens_to_its_files_and_a_file_to_its_diff(
    qtbot: Any, make_window: Any, backend: FakeBackend
) -> None:
    win = _open(qtbot, make_window, backend)
    card = _layout(win).changes
    assert card is not None and card.title == "2 files changed" and not card.rows
    _click(qtbot, win, "a1", "changes")
    qtbot.wait_until(lambda: len(_layout(win).changes.rows) == 2)
    assert [r.change.path.rsplit("/", 1)[1] for r in _layout(win).changes.rows] == [
        "dates.py",
        "CHANGELOG.md",
    ]
    assert all(r.diff is None for r in _layout(win).changes.rows)
    _click(qtbot, win, "a1", "change_file", 0)
    qtbot.wait_until(lambda: _layout(win).changes.rows[0].diff is not None)
    diff = _layout(win).changes.rows[0].diff.toPlainText()
    assert "-    return datetime.strptime(text, '%d/%m/%Y')" in diff
    assert _layout(win).changes.rows[1].diff is None


def test_restore_this_file_waits_for_the_checkpoint_diff_and_restores_that_file(
    qtbot: Any, make_window: Any, backend: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    win = _open(qtbot, make_window, backend)
    dialog = _dialog(qtbot, win)
    assert ("load_rollback", "s1") in backend.calls
    assert not dialog.restore_file.isEnabled()

    backend.emit("on_rollback", "s1", LISTED)  # listed: the turn's checkpoint is asked its diff
    assert ("rollback_diff", ("s1", CHECKPOINT)) in backend.calls
    assert dialog.restore_file.isVisible() and not dialog.restore_file.isEnabled()
    with_diff = RollbackState(True, "", LISTED.checkpoints, {CHECKPOINT: GIT_DIFF}, True)
    backend.emit("on_rollback", "s1", with_diff)
    assert dialog.restore_file.isEnabled()
    assert "+    raise ValueError" in dialog.preview.toPlainText()
    qtbot.mouseClick(dialog.restore_file, Qt.MouseButton.LeftButton)
    assert backend.calls[-1] == ("restore_checkpoint", ("s1", CHECKPOINT, "src/dates.py"))

    asked: list[bool] = []
    monkeypatch.setattr(
        RestoreDialog, "confirm_trim", classmethod(lambda c, p: asked.append(True) or False)
    )
    made = len(backend.calls)
    qtbot.mouseClick(dialog.restore_all, Qt.MouseButton.LeftButton)
    assert asked == [True] and len(backend.calls) == made  # declined: nothing restored
    monkeypatch.setattr(RestoreDialog, "confirm_trim", classmethod(lambda c, p: True))
    qtbot.mouseClick(dialog.restore_all, Qt.MouseButton.LeftButton)
    assert backend.calls[-1] == ("restore_checkpoint", ("s1", CHECKPOINT, ""))

    backend.emit("on_notice", "s1", BUSY)  # the gateway refused: a turn runs
    assert dialog.status.text() == BUSY
    dialog.close()


def test_restore_to_here_is_for_the_last_turn_and_off_checkpoints_are_said(
    qtbot: Any, make_window: Any, backend: FakeBackend
) -> None:
    later = (user("u2", "thanks"), assistant("a2", "You're welcome."))
    for msg in later:
        msg.created_at += 100  # the next turn, after the checkpoint
    win = _open(qtbot, make_window, backend, *later)
    dialog = _dialog(qtbot, win)
    backend.emit("on_rollback", "s1", LISTED)
    assert dialog.restore_all.isVisible() and not dialog.restore_all.isEnabled()
    assert dialog.restore_all.toolTip() == NOT_LAST

    backend.emit("on_rollback", "s1", RollbackState(reason=CHECKPOINTS_OFF, loaded=True))
    assert not dialog.restore_file.isVisible() and not dialog.restore_all.isVisible()
    assert dialog.status.text() == f"Restore not available: {CHECKPOINTS_OFF}"
    assert dialog.status.toolTip() == CHECKPOINTS_OFF
    # The change the agent reported is still shown.
    assert "+    raise ValueError" in dialog.preview.toPlainText()
    dialog.close()


def test_the_keyboard_reaches_the_card_and_review_and_restore_through_the_message_menu(
    qtbot: Any, make_window: Any, backend: FakeBackend
) -> None:
    win = _open(qtbot, make_window, backend)
    view = win.chat_view
    row = view.chat_model.row_of("a1")

    def trigger(label: str) -> None:
        menu = view.message_menu(row)
        action = next((a for a in menu.actions() if a.text() == label), None)
        assert action is not None, [a.text() for a in menu.actions()]
        action.trigger()
        menu.deleteLater()

    trigger("Show or hide changed files (2 files changed)")
    view.chat_model.flush()
    qtbot.wait_until(lambda: len(_layout(win).changes.rows) == 2)
    trigger("Review and restore…")
    dialog = view.findChild(RestoreDialog)
    assert dialog is not None and dialog.isVisible()
    assert dialog.files.count() == 2 and dialog.files.accessibleName() == "Changed files"
    dialog.close()


def test_a_dialog_destroyed_with_its_window_stops_listening(
    qtbot: Any, make_window: Any, backend: FakeBackend
) -> None:
    win = _open(qtbot, make_window, backend)
    dialog = _dialog(qtbot, win)
    listening = len(backend.listeners)
    dialog.deleteLater()  # gone without a close, as when its parent goes
    qtbot.wait_until(lambda: len(backend.listeners) == listening - 1)
    backend.emit("on_rollback", "s1", LISTED)  # reaches no deleted dialog


def test_a_file_the_turn_created_has_nothing_to_restore_and_says_so(
    qtbot: Any, make_window: Any, backend: FakeBackend
) -> None:
    win = _open(qtbot, make_window, backend)
    dialog = _dialog(qtbot, win)
    created = (
        "diff --git a/src/dates.py b/src/dates.py\nnew file mode 100644\nindex 0000000..86ba82a\n"
        "--- /dev/null\n+++ b/src/dates.py\n@@ -0,0 +1 @@\n+def parse(text): ...\n"
    )
    backend.emit(
        "on_rollback",
        "s1",
        RollbackState(True, "", LISTED.checkpoints, {CHECKPOINT: created}, True),
    )
    assert dialog.restore_file.isVisible() and not dialog.restore_file.isEnabled()
    assert dialog.restore_file.toolTip() == NEW_FILE
    assert "+def parse(text)" in dialog.preview.toPlainText()
    dialog.close()
