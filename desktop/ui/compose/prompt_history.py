"""Up/Down in an empty message box walk this chat's earlier prompts, as in a shell.

Up in an empty box shows the newest prompt, Up again the one before; Down walks back and, past
the newest, restores what the box held before (so nothing typed is lost). Once a shown prompt is
edited the arrows move the cursor again: an edited draft is never replaced.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit


class PromptHistory(QObject):
    """Watches `edit`'s keys; `prompts()` gives this chat's prompts, oldest first."""

    def __init__(self, edit: QPlainTextEdit, prompts: Callable[[], list[str]]) -> None:
        super().__init__(edit)
        self._edit = edit
        self._prompts = prompts
        self._walk: list[str] = []
        self._pos: int | None = None  # index into _walk while walking
        self._shown = ""
        self._draft = ""
        self._setting = False
        edit.installEventFilter(self)
        edit.textChanged.connect(self._on_text_changed)

    @property
    def walking(self) -> bool:
        return self._pos is not None

    def eventFilter(self, watched: QObject, e: QEvent) -> bool:
        if watched is self._edit and e.type() == QEvent.Type.KeyPress:
            assert isinstance(e, QKeyEvent)
            if e.modifiers() == Qt.KeyboardModifier.NoModifier:
                if e.key() == Qt.Key.Key_Up:
                    return self._older()
                if e.key() == Qt.Key.Key_Down:
                    return self._newer()
        return super().eventFilter(watched, e)

    def _older(self) -> bool:
        text = self._edit.toPlainText()
        if self._pos is None:
            if text:
                return False  # a draft: Up moves the cursor
            walk = [p for p in self._prompts() if p.strip()]
            # The same prompt sent twice in a row is one step.
            self._walk = [p for i, p in enumerate(walk) if i == 0 or walk[i - 1] != p]
            if not self._walk:
                return False
            self._draft = text
            self._show(len(self._walk) - 1)
            return True
        if self._pos > 0:
            self._show(self._pos - 1)
        return True

    def _newer(self) -> bool:
        if self._pos is None:
            return False
        if self._pos + 1 < len(self._walk):
            self._show(self._pos + 1)
        else:
            self._pos = None
            self._set(self._draft)  # past the newest: what the box held before
        return True

    def _show(self, pos: int) -> None:
        self._pos = pos
        self._shown = self._walk[pos]
        self._set(self._shown)

    def _set(self, text: str) -> None:
        self._setting = True
        try:
            self._edit.setPlainText(text)
            self._edit.moveCursor(QTextCursor.MoveOperation.End)
        finally:
            self._setting = False

    def _on_text_changed(self) -> None:
        # Typed into, or another chat's draft shown: stop walking (an edit is never replaced).
        if not self._setting:
            self._pos = None
