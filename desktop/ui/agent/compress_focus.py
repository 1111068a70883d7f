"""Before Compress: what the summary should keep (Hermes' `session.compress {focus_topic}`),
asked in a small dialog. Empty keeps the gateway's own choice; Cancel compresses nothing."""

from __future__ import annotations

from PySide6.QtWidgets import QInputDialog, QLineEdit, QWidget

PROMPT = (
    "The agent summarises the conversation to free its context.\n"
    "Keep in detail (optional, e.g. “the parser bug”):"
)


class CompressFocus:
    """The dialog, reached through a patchable classmethod (tests never open it)."""

    @classmethod
    def ask(cls, parent: QWidget) -> str | None:
        """The focus topic ("" for none), or None when the user cancelled."""
        text, ok = QInputDialog.getText(
            parent, "Compress the conversation", PROMPT, QLineEdit.EchoMode.Normal, ""
        )
        return " ".join(text.split()) if ok else None
