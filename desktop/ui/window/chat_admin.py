"""Opening a new chat (an empty one is reused), renaming, pinning, archiving, deleting (undoable)
and exporting chats, and what each asks."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QInputDialog,
    QWidget,
)

from desktop.core.errors import StorageError
from desktop.core.models import SessionSummary
from desktop.ui.backend import ChatBackend, Draft
from desktop.ui.platform.folders import Folders
from desktop.ui.render.markdown import title_text
from desktop.ui.sessions.session_list import is_empty_chat
from desktop.ui.window.sidebar import Sidebar
from desktop.ui.window.undo_delete import UndoDeletes


class Dialogs:
    """The window's modal questions, one classmethod each (patched in tests, never opened)."""

    @classmethod
    def run(cls, dialog: QDialog) -> int:
        """Run a modal dialog."""
        return int(dialog.exec())

    @classmethod
    def ask_text(cls, parent: QWidget, title: str, label: str, text: str) -> str | None:
        """Ask for a line of text; None when cancelled."""
        dialog = text_dialog(parent, title, label, text)
        try:
            return dialog.textValue() if cls.run(dialog) else None
        finally:
            dialog.deleteLater()

    @classmethod
    def ask_save_path(cls, parent: QWidget, suggested: str) -> str | None:
        """Ask where to export; None when cancelled."""
        path, _ = QFileDialog.getSaveFileName(
            parent,
            "Export chat",
            suggested,
            "Markdown (*.md);;JSON, everything kept (*.json)",
        )
        return str(path) or None


def text_dialog(parent: QWidget, title: str, label: str, text: str) -> QInputDialog:
    """A one-line text question wide enough for a long chat title (within the screen)."""
    dialog = QInputDialog(parent)
    dialog.setWindowTitle(title)
    dialog.setLabelText(label)
    dialog.setTextValue(text)
    dialog.setAccessibleName(title)
    fm = dialog.fontMetrics()
    screen = dialog.screen().availableGeometry().width()
    width = max(420, min(fm.horizontalAdvance(text) + 120, screen * 4 // 5))
    dialog.resize(width, dialog.sizeHint().height())
    dialog.setMinimumWidth(width)
    return dialog


_UNSAFE = set('<>:"/\\|?*')  # not allowed in a file name on Windows, macOS or Linux


def export_name(summary: SessionSummary | None) -> str:
    """The file name offered for exporting a chat: its title as plain text (no Markdown
    marks), safe on every file system."""
    title = title_text(summary.title) if summary and summary.title else ""
    stem = "".join(" " if c in _UNSAFE or not c.isprintable() else c for c in title)
    stem = " ".join(stem.split())[:120].strip(" .")
    return f"{stem or 'chat'}.md"


class ChatOwner(Protocol):
    """The window, as far as managing its chats goes."""

    @property
    def backend(self) -> ChatBackend | None: ...
    @property
    def session_key(self) -> str | None: ...
    def open_session(self, key: str) -> None: ...
    def close_chat(self) -> None: ...
    def show_status(self, text: str, ms: int) -> None: ...


class ChatAdmin:
    """New chats, and rename, delete and export, for the chat list's current chat or the open
    one."""

    def __init__(
        self, owner: ChatOwner, parent: QWidget, sidebar: Sidebar, folders: Folders
    ) -> None:
        self._owner = owner
        self._folders = folders
        self._parent = parent
        self._sidebar = sidebar
        self.undo = UndoDeletes(parent, sidebar.hide_deleting)
        self._left_empty: set[str] = set()  # empty new chats the user left (not listed)

    def create_chat(self) -> str | None:
        """Open an empty new chat of the shown profile: the one already there (open, left
        behind, or listed from an earlier run), else a new one; its key (None: no profile)."""
        backend = self._owner.backend
        if backend is None:
            return None
        key = self._empty_chat()
        if key is not None:
            if key != self._owner.session_key:
                self._owner.open_session(key)
            return key
        key = backend.create_session()
        self._sidebar.set_sessions(backend.sessions())
        self._owner.open_session(key)
        return key

    def _is_empty_chat(self, key: str) -> bool:
        summary = self._sidebar.session(key)
        return summary is not None and is_empty_chat(summary)

    def _empty_chat(self) -> str | None:
        """An empty new chat to open rather than making another."""
        key = self._owner.session_key
        if key is not None and self._is_empty_chat(key):
            return key
        for key in (*sorted(self._left_empty), *self._sidebar.session_model.keys()):
            if self._is_empty_chat(key):
                return key  # (a draft left in it from an earlier run shows when it opens)
        return None

    def leave(self, key: str, draft: Draft) -> None:
        """Chat `key` opens (`draft` in the one open): an empty new chat left behind drops out
        of the list."""
        prev = self._owner.session_key
        if (
            prev is not None
            and prev != key
            and self._is_empty_chat(prev)
            and not draft.text.strip()
            and not draft.attachments
        ):
            self._left_empty.add(prev)
        self._left_empty.discard(key)
        self._sidebar.session_filter.set_hidden(self._left_empty)

    def export_open(self) -> None:
        """Export the open chat to a Markdown or JSON file the user picks."""
        backend, key = self._owner.backend, self._owner.session_key
        if backend is None or key is None:
            return
        name = export_name(self._sidebar.session(key))
        path = Dialogs.ask_save_path(self._parent, str(Path(self._folders.start("export"), name)))
        if not path:
            return
        self._folders.remember("export", path)
        try:
            backend.export_session(key, path)
        except StorageError as exc:  # ExportError: the chat or the file could not be written
            self._owner.show_status(f"Export failed: {exc}", 8000)
            return
        self._owner.show_status(f"Exported to {path}", 5000)

    def rename_selected(self) -> None:
        """Ask for a new title of the chat list's current chat and pass it to the backend."""
        key, backend = self._sidebar.selected_key(), self._owner.backend
        if not key or backend is None:
            return
        summary = self._sidebar.session(key)
        current = summary.title if summary else ""
        title = Dialogs.ask_text(self._parent, "Rename chat", "Title:", current)
        if title and title.strip() and title != current:
            backend.rename_session(key, title.strip())

    def pin_selected(self) -> None:
        """Pin the chat list's current chat to the top, or unpin it."""
        key, backend = self._sidebar.selected_key(), self._owner.backend
        summary = self._sidebar.session(key) if key else None
        if key and backend is not None and summary is not None:
            backend.pin_session(key, not summary.pinned)

    def archive_selected(self) -> None:
        """Archive the selected chats (they leave the list), or restore archived ones."""
        backend = self._owner.backend
        chosen = [(k, s) for k in self._sidebar.selected_keys() if (s := self._sidebar.session(k))]
        if backend is None or not chosen:
            return
        restore = all(s.archived for _, s in chosen)
        for key, _ in chosen:
            backend.archive_session(key, not restore)
        them = "it" if len(chosen) == 1 else "them"
        verb = "restored" if restore else f"archived; find {them} under Archived"
        self._owner.show_status(f"{_what(chosen)} {verb}", 4000)

    def delete_selected(self) -> None:
        """Delete the selected chats, undoable for a few seconds before the gateway is told."""
        backend = self._owner.backend
        chosen = [(k, s) for k in self._sidebar.selected_keys() if (s := self._sidebar.session(k))]
        if backend is None or not chosen:
            return
        self.undo.delete(backend, [k for k, _ in chosen], f"Deleted {_what(chosen)}")
        if self._owner.session_key in {k for k, _ in chosen}:
            self._owner.close_chat()


def _what(chosen: list[tuple[str, SessionSummary]]) -> str:
    if len(chosen) == 1:
        return f"“{chosen[0][1].title or 'New chat'}”"
    return f"{len(chosen)} chats"
