"""The chat view's list model: one row per ChatMessage, with deltas coalesced per frame."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)

from desktop.core.chats.file_changes import changes_of, summary
from desktop.core.chats.reply_state import state_text
from desktop.core.models import ChatMessage
from desktop.ui.chat.version_switch import version_name
from desktop.ui.render.delivery import bubble_error_text, has_note
from desktop.ui.render.markdown import plain_text

MESSAGE_ROLE = Qt.ItemDataRole.UserRole + 1
REVISION_ROLE = Qt.ItemDataRole.UserRole + 2
# Updates are paced by painting, not by a clock: a batch is published on the next loop turn
# unless the previous batch is still waiting for its paint, in which case the next batch
# follows that paint (`paint_done`). Without a paint (the row is off screen, the view hidden,
# no view at all) the batch goes out after one frame anyway.
FRAME_MS = 16

_Index = QModelIndex | QPersistentModelIndex


class MessageListModel(QAbstractListModel):
    """Messages of the open session. Updates to existing rows are batched, one batch per paint.

    Signals:
        flushed(int): a batch of coalesced row updates was published (number of rows).
        appended(): rows were added at the end.
    """

    flushed = Signal(int)
    appended = Signal()

    def __init__(
        self, parent: QObject | None = None, plain: Callable[[str], str] = plain_text
    ) -> None:
        super().__init__(parent)
        # Markdown to what a screen reader says (the view passes its cached one).
        self._plain = plain
        self._rows: list[ChatMessage] = []
        self._row_of: dict[str, int] = {}
        self._revision: dict[str, int] = {}
        self._dirty: set[str] = set()
        # Replies that started since the last batch: added with it (`_add_started`).
        self._started: dict[str, ChatMessage] = {}
        # Armed only when an update arrives; idle means no timer runs.
        self._frame = QTimer(self)
        self._frame.setSingleShot(True)
        self._frame.setTimerType(Qt.TimerType.PreciseTimer)
        self._frame.timeout.connect(self._on_frame_timeout)
        self._awaiting_paint = False

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 - Qt's default
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        msg = self._rows[index.row()]
        if role == MESSAGE_ROLE:
            return msg
        if role == REVISION_ROLE:
            return self._revision.get(msg.id, 0)
        if role == Qt.ItemDataRole.AccessibleTextRole:
            # Screen readers get the text as shown, not its markdown marks.
            return self._spoken(msg)
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{msg.role.value}: {msg.text}"
        return None

    def _spoken(self, msg: ChatMessage) -> str:
        """What a screen reader says of a row: its text as shown, then each line the bubble
        draws besides it (how a reply ended, a prompt that did not get through, its files, the
        files the turn changed, which version), so nothing on screen is only seen."""
        parts = [f"{msg.role.value}: {self._plain(msg.text)}"]
        if msg.attachments:
            names = ", ".join(a.filename for a in msg.attachments)
            parts.append(f"Attached: {names}")
        if state := state_text(msg):
            parts.append(state)
        if has_note(msg) and (note := bubble_error_text(msg)):
            parts.append(note)
        if changes := changes_of(msg):
            parts.append(summary(changes))
        if msg.versions:
            parts.append(version_name(msg))
        said = parts[0]
        for part in parts[1:]:  # one stop between parts, not two after a sentence's own
            said += f" {part}" if said.endswith((".", "!", "?", "…")) else f". {part}"
        return said

    def message_at(self, row: int) -> ChatMessage:
        """The message shown in `row`."""
        return self._rows[row]

    def messages(self) -> list[ChatMessage]:
        """Every row's message, in order (a copy is not made: do not modify)."""
        return self._rows

    def revision_of(self, message_id: str) -> int:
        """How often a message's row was republished; part of every layout cache key."""
        return self._revision.get(message_id, 0)

    def row_of(self, message_id: str) -> int | None:
        """The row of a message id, or None."""
        return self._row_of.get(message_id)

    def reset(self, messages: list[ChatMessage]) -> None:
        """Replace every row (opening a session)."""
        self.beginResetModel()
        self._frame.stop()
        self._dirty.clear()
        self._started.clear()
        self._awaiting_paint = False
        self._rows = list(messages)
        self._row_of = {m.id: i for i, m in enumerate(self._rows)}
        self._revision = {}
        self.endResetModel()

    def prepend(self, messages: list[ChatMessage]) -> None:
        """Older messages go before every row (a page of history was loaded)."""
        if not messages:
            return
        self._add_started()
        self.beginInsertRows(QModelIndex(), 0, len(messages) - 1)
        self._rows[0:0] = messages
        self._row_of = {m.id: i for i, m in enumerate(self._rows)}
        self.endInsertRows()

    def append_rows(self, messages: list[ChatMessage]) -> None:
        """Newer messages go after every row (a page of history was loaded again)."""
        if not messages:
            return
        self._add_started()
        n = len(self._rows)
        self.beginInsertRows(QModelIndex(), n, n + len(messages) - 1)
        self._rows.extend(messages)
        self._row_of.update((m.id, n + i) for i, m in enumerate(messages))
        self.endInsertRows()

    def drop(self, count: int, newest: bool) -> list[str]:
        """Let the `count` newest (or oldest) rows go; their message ids."""
        self._add_started()
        n = len(self._rows)
        count = min(count, n)
        if count <= 0:
            return []
        first, last = (n - count, n - 1) if newest else (0, count - 1)
        self.beginRemoveRows(QModelIndex(), first, last)
        gone = [m.id for m in self._rows[first : last + 1]]
        del self._rows[first : last + 1]
        for message_id in gone:
            self._dirty.discard(message_id)
            self._revision.pop(message_id, None)
        self._row_of = {m.id: i for i, m in enumerate(self._rows)}
        self.endRemoveRows()
        return gone

    def upsert(self, message: ChatMessage) -> None:
        """Add a new message at once, or schedule a changed one for the next frame.

        A reply that starts streaming is added with the next frame's batch, as are its first
        words: a turn that ended just before (a queued prompt's reply starts at once) is then
        drawn as it ended in the same paint, not once as it was and once more as it is."""
        row = self._row_of.get(message.id)
        if row is None:
            if message.streaming or message.id in self._started:
                self._started[message.id] = message
                self._schedule()
                return
            self._add_started()
            self._append([message])
            return
        self._rows[row] = message
        self._dirty.add(message.id)
        self._schedule()

    def _schedule(self) -> None:
        if not self._frame.isActive():
            self._frame.start(FRAME_MS if self._awaiting_paint else 0)

    def _append(self, messages: list[ChatMessage]) -> None:
        n = len(self._rows)
        self.beginInsertRows(QModelIndex(), n, n + len(messages) - 1)
        self._rows.extend(messages)
        self._row_of.update((m.id, n + i) for i, m in enumerate(messages))
        self.endInsertRows()
        self.appended.emit()

    def _add_started(self) -> None:
        """Add the replies that started since the last batch (before any other row change)."""
        if self._started:
            started, self._started = list(self._started.values()), {}
            self._append(started)

    def remove(self, message_id: str) -> None:
        """Remove a message row."""
        if self._started.pop(message_id, None) is not None:
            return
        row = self._row_of.get(message_id)
        if row is None:
            return
        self.beginRemoveRows(QModelIndex(), row, row)
        del self._rows[row]
        self._dirty.discard(message_id)
        self._revision.pop(message_id, None)
        self._row_of = {m.id: i for i, m in enumerate(self._rows)}
        self.endRemoveRows()

    def touch(self, message_id: str) -> None:
        """Mark a row changed now (expanded a card): bumps its revision, invalidates it."""
        self._add_started()
        row = self._row_of.get(message_id)
        if row is not None:
            self._revision[message_id] = self._revision.get(message_id, 0) + 1
            idx = self.index(row)
            self.dataChanged.emit(idx, idx)

    def flush(self) -> None:
        """Publish pending updates now: one dataChanged per changed row."""
        self._frame.stop()
        self._on_frame_timeout()

    def paint_done(self) -> None:
        """The view painted: the updates gathered meanwhile go out on the next loop turn."""
        self._awaiting_paint = False
        if self._dirty or self._started:
            self._frame.start(0)

    def _on_frame_timeout(self) -> None:
        started = len(self._started)
        self._add_started()
        dirty, self._dirty = self._dirty, set()
        self._awaiting_paint = bool(dirty) or started > 0
        for message_id in dirty:
            row = self._row_of.get(message_id)
            if row is None:
                continue
            self._revision[message_id] = self._revision.get(message_id, 0) + 1
            idx = self.index(row)
            self.dataChanged.emit(idx, idx, [MESSAGE_ROLE, REVISION_ROLE])
        if dirty or started:
            self.flushed.emit(len(dirty) + started)
