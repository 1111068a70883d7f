"""Connects the work panel's Stop buttons and fold to the backend of the open chat."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QObject

from desktop.ui.agent.work_panel import WorkPanel
from desktop.ui.backend import ChatBackend


class OpenChat(Protocol):
    @property
    def backend(self) -> ChatBackend | None: ...
    @property
    def session_key(self) -> str | None: ...


class WorkIntents(QObject):
    """Stop a subagent or a background process of the chat shown; say what the gateway lacks."""

    def __init__(self, chat: OpenChat, panel: WorkPanel) -> None:
        super().__init__(panel)
        self._chat = chat
        self._panel = panel
        panel.stop_subagent.connect(self._on_panel_stop_subagent)
        panel.kill_process.connect(self._on_panel_kill_process)

    def show_support(self) -> None:
        """The shown profile's connection changed or a chat opened: Stop where it is served."""
        backend = self._chat.backend
        self._panel.set_support(*(backend.work_support() if backend is not None else ("", "")))

    def _on_panel_stop_subagent(self, subagent_id: str) -> None:
        backend, key = self._chat.backend, self._chat.session_key
        if backend is not None and key:
            backend.stop_subagent(key, subagent_id)

    def _on_panel_kill_process(self, process_id: str) -> None:
        backend, key = self._chat.backend, self._chat.session_key
        if backend is not None and key:
            backend.kill_process(key, process_id)
