"""Review and restore: the files a reply changed, each file's diff against its checkpoint, and
Restore this file / Restore to here (Hermes' rollback.*), or why restoring is not offered.

The diff shown is what a restore would undo (the checkpoint taken in that turn against the
files now, `rollback.diff`); Restore this file is enabled only once it is on screen. Restore to
here also drops the last exchange from the agent's history, so it is offered on the last turn
only and asks first.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from desktop.core.chats.file_changes import FileChange, changes_of, git_sections, same_file
from desktop.core.listeners import BackendListener
from desktop.core.models import ChatMessage, RollbackState
from desktop.core.profile.agent.rollback import checkpoint_for, is_last_turn
from desktop.ui.backend import ChatBackend
from desktop.ui.theme import Colors

TRIM_QUESTION = (
    "Put every file back as it was before this turn?\n\n"
    "This also removes this exchange (your prompt and this reply) from the agent's history."
)
NOT_LAST = (
    "Only the last turn can be restored whole: restoring also removes the last exchange "
    "from the agent's history. Restore single files instead."
)
NO_CHECKPOINT = "the gateway took no checkpoint in this turn (or it was pruned)"
NEW_FILE = (
    "This file did not exist at the checkpoint: there is nothing to put back "
    "(delete it yourself if you do not want it)"
)
ASKING = "Asking the gateway for its checkpoints…"


class _Listener(QObject, BackendListener):
    rollback = Signal(str, object)
    notice = Signal(str, str)

    def on_rollback(self, key: str, state: RollbackState) -> None:
        self.rollback.emit(key, state)

    def on_notice(self, key: str, text: str) -> None:
        self.notice.emit(key, text)


class RestoreDialog(QDialog):
    """Non-modal; one per reply at a time. Closing it unsubscribes."""

    def __init__(
        self,
        backend: ChatBackend,
        key: str,
        reply: ChatMessage,
        messages: Sequence[ChatMessage],
        *,
        colors: Colors,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("restoreDialog")
        self.setWindowTitle("Changed files")
        self.setAccessibleName("Changed files")
        self.resize(640, 480)
        self._backend, self._key, self._reply = backend, key, reply
        self._messages = list(messages)
        self._colors = colors
        self._changes: tuple[FileChange, ...] = changes_of(reply)
        self._state = backend.rollback_state(key)

        self.status = QLabel(ASKING)
        self.status.setObjectName("restoreStatus")
        self.status.setWordWrap(True)
        self.files = QListWidget()
        self.files.setAccessibleName("Changed files")
        for change in self._changes:
            item = QListWidgetItem(f"{change.path}   +{change.added} \u2212{change.removed}")
            item.setToolTip(change.path)
            self.files.addItem(item)
        self.preview = QTextEdit()
        self.preview.setReadOnly(True)
        self.preview.setAccessibleName("Diff preview")
        mono = QFont("monospace")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        self.preview.setFont(mono)
        self.preview_note = QLabel()
        self.preview_note.setWordWrap(True)
        self.restore_file = QPushButton("Restore this file")
        self.restore_all = QPushButton("Restore to here")
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        self.restore_file.clicked.connect(self._on_restore_file_clicked)
        self.restore_all.clicked.connect(self._on_restore_all_clicked)

        buttons = QHBoxLayout()
        buttons.addWidget(self.restore_file)
        buttons.addWidget(self.restore_all)
        buttons.addStretch(1)
        buttons.addWidget(close)
        box = QVBoxLayout(self)
        box.addWidget(self.status)
        box.addWidget(self.files, 1)
        box.addWidget(self.preview_note)
        box.addWidget(self.preview, 3)
        box.addLayout(buttons)

        self._listener = _Listener(self)
        self._listener.rollback.connect(self._on_backend_rollback)
        self._listener.notice.connect(self._on_backend_notice)
        unsubscribe = backend.subscribe(self._listener)
        done: list[bool] = []

        def unsubscribe_once() -> None:
            if not done:
                done.append(True)
                unsubscribe()

        self._unsubscribe = unsubscribe_once
        # Also when the window goes first and takes the dialog with it, never closed.
        self.destroyed.connect(lambda *_: unsubscribe_once())
        self.files.currentRowChanged.connect(lambda _row: self._show())
        if self._changes:
            self.files.setCurrentRow(0)
        self._show()
        backend.load_rollback(key)

    # -- public (tests and the window) ----------------------------------------------------------

    @classmethod
    def confirm_trim(cls, parent: QWidget) -> bool:
        """Ask before a restore that trims the agent's history (patched in tests)."""
        answer = QMessageBox.question(parent, "Restore to here", TRIM_QUESTION)
        return answer == QMessageBox.StandardButton.Yes

    def checkpoint(self) -> str:
        found = checkpoint_for(self._state, self._messages, self._reply.id)
        return found.hash if found is not None else ""

    def closeEvent(self, e: object) -> None:
        self._unsubscribe()
        super().closeEvent(e)  # type: ignore[arg-type]

    # -- state ----------------------------------------------------------------------------------

    def _on_backend_rollback(self, key: str, state: object) -> None:
        if key != self._key or not isinstance(state, RollbackState):
            return
        self._state = state
        hash_ = self.checkpoint()
        if state.available and hash_ and hash_ not in state.diffs:
            self._backend.rollback_diff(self._key, hash_)
        self._show()

    def _on_backend_notice(self, key: str, text: str) -> None:
        if key == self._key and text.startswith(("Restored", "Not restored", "No diff")):
            self.status.setText(text)
            self.status.setToolTip(text)

    def _current(self) -> FileChange | None:
        row = self.files.currentRow()
        return self._changes[row] if 0 <= row < len(self._changes) else None

    def _section(self, change: FileChange) -> tuple[str, str] | None:
        """(relative path, diff) of `change` in the checkpoint's diff; None when it has none
        (not asked yet, or the file is as it was then)."""
        diff = self._state.diffs.get(self.checkpoint())
        if diff is None:
            return None
        for rel, text in git_sections(diff).items():
            if same_file(change.path, rel):
                return rel, text
        return None

    def _show(self) -> None:
        state, hash_ = self._state, self.checkpoint()
        available = state.available and bool(hash_)
        reason = state.reason if not state.available else ("" if hash_ else NO_CHECKPOINT)
        if not state.loaded:
            reason = reason or ASKING
        last = is_last_turn(self._messages, self._reply.id)
        change = self._current()
        section = self._section(change) if change is not None else None
        diff_asked = hash_ in state.diffs
        # Hidden where they cannot work, the reason said once (status) and in the tooltips.
        for button in (self.restore_file, self.restore_all):
            button.setVisible(available)
        # A file the turn created is not in the checkpoint: there is nothing to put back.
        created = section is not None and section[1].startswith("new file mode")
        self.restore_file.setEnabled(section is not None and not created)
        self.restore_all.setEnabled(available and last)
        self.restore_all.setToolTip("" if last else NOT_LAST)
        if reason:
            self.status.setText(f"Restore not available: {reason}" if state.loaded else reason)
            self.status.setToolTip(reason)
        elif not self.status.text().startswith(("Restored", "Not restored")):
            self.status.setText(f"Checkpoint {hash_[:8]} of this turn")
            self.status.setToolTip("")
        if change is None:
            self.preview.clear()
            return
        if section is not None:
            self.preview_note.setText(
                f"What Restore this file undoes: {section[0]} at the checkpoint against now"
            )
            self._set_diff(section[1])
        else:
            note = "The change the agent made (as its tool reported it)"
            if available and diff_asked:
                note += ": the file is as it was at the checkpoint now, nothing to restore"
            self.preview_note.setText(note)
            self._set_diff(change.diff)
        tip = "" if section is not None else "Nothing to restore: no difference from the checkpoint"
        self.restore_file.setToolTip(NEW_FILE if created else tip)

    def _set_diff(self, diff: str) -> None:
        c = self._colors
        lines = []
        for line in (diff or "(no diff)").splitlines():
            color = c.text
            if line.startswith("+"):
                color = c.success
            elif line.startswith("-"):
                color = c.danger
            elif line.startswith("@@"):
                color = c.muted
            lines.append(f'<span style="color:{color}">{html.escape(line) or "&nbsp;"}</span>')
        self.preview.setHtml(f'<pre style="margin:0">{"<br>".join(lines)}</pre>')

    # -- intents --------------------------------------------------------------------------------

    def _on_restore_file_clicked(self) -> None:
        change = self._current()
        section = self._section(change) if change is not None else None
        if section is None:
            return
        self.status.setText(f"Restoring {section[0]}…")
        self._backend.restore_checkpoint(self._key, self.checkpoint(), section[0])

    def _on_restore_all_clicked(self) -> None:
        if not type(self).confirm_trim(self):
            return
        self.status.setText("Restoring the files…")
        self._backend.restore_checkpoint(self._key, self.checkpoint())


def open_restore(
    backend: ChatBackend,
    key: str,
    reply: ChatMessage,
    messages: Sequence[ChatMessage],
    *,
    colors: Colors,
    parent: QWidget,
) -> RestoreDialog:
    dialog = RestoreDialog(backend, key, reply, messages, colors=colors, parent=parent)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.show()
    return dialog
