"""Renaming, deleting and exporting chats, and the questions each asks first."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtWidgets import QDialog, QFileDialog, QInputDialog, QMessageBox, QWidget

from desktop.core.errors import StorageError
from desktop.core.models import SessionSummary
from desktop.ui.backend import ChatBackend
from desktop.ui.window.sidebar import Sidebar


class Dialogs:
    """The window's modal questions, one classmethod each (patched in tests, never opened)."""

    @classmethod
    def run(cls, dialog: QDialog) -> int:
        """Run a modal dialog."""
        return int(dialog.exec())

    @classmethod
    def ask_text(cls, parent: QWidget, title: str, label: str, text: str) -> str | None:
        """Ask for a line of text; None when cancelled."""
        value, ok = QInputDialog.getText(parent, title, label, text=text)
        return str(value) if ok else None

    @classmethod
    def confirm(cls, parent: QWidget, title: str, text: str) -> bool:
        """Ask a yes/no question."""
        answer = QMessageBox.question(parent, title, text)
        return bool(answer == QMessageBox.StandardButton.Yes)

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


def export_name(summary: SessionSummary | None) -> str:
    """The file name offered for exporting a chat: its title, safe on every file system."""
    stem = "".join(
        c if c.isalnum() or c in " -_" else "_"
        for c in (summary.title if summary and summary.title else "chat")
    )
    return f"{stem.strip() or 'chat'}.md"


class ChatOwner(Protocol):
    """The window, as far as managing its chats goes."""

    @property
    def backend(self) -> ChatBackend | None: ...
    @property
    def session_key(self) -> str | None: ...
    def close_chat(self) -> None: ...
    def show_status(self, text: str, ms: int) -> None: ...


class ChatAdmin:
    """Rename, delete and export, for the chat list's current chat or the open one."""

    def __init__(self, owner: ChatOwner, parent: QWidget, sidebar: Sidebar) -> None:
        self._owner = owner
        self._parent = parent
        self._sidebar = sidebar

    def export_open(self) -> None:
        """Export the open chat to a Markdown or JSON file the user picks."""
        backend, key = self._owner.backend, self._owner.session_key
        if backend is None or key is None:
            return
        path = Dialogs.ask_save_path(self._parent, export_name(self._sidebar.session(key)))
        if not path:
            return
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
        """Archive the chat list's current chat (it leaves the list), or restore an archived one."""
        key, backend = self._sidebar.selected_key(), self._owner.backend
        summary = self._sidebar.session(key) if key else None
        if key and backend is not None and summary is not None:
            backend.archive_session(key, not summary.archived)
            verb = "restored" if summary.archived else "archived; find it under Archived"
            self._owner.show_status(f"“{summary.title or 'New chat'}” {verb}", 4000)

    def delete_selected(self) -> None:
        """Delete the chat list's current chat after confirmation."""
        key, backend = self._sidebar.selected_key(), self._owner.backend
        if not key or backend is None:
            return
        summary = self._sidebar.session(key)
        name = summary.title if summary and summary.title else "this chat"
        if not Dialogs.confirm(self._parent, "Delete chat", f"Delete “{name}”?"):
            return
        backend.delete_session(key)
        if key == self._owner.session_key:
            self._owner.close_chat()
