"""Opening a sent attachment with the system's viewer, or saving a copy of it elsewhere."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from desktop.core.disk.attachments import AttachmentError, save_copy
from desktop.core.models import Attachment


class AttachmentActions:
    """Open (the system viewer: images, PDFs, text...) and Save as… for one attachment.

    The dialogs are classmethods, so a test replaces them instead of opening one.
    """

    @classmethod
    def ask_save_path(cls, parent: QWidget, suggested: str) -> str:
        path, _ = QFileDialog.getSaveFileName(parent, "Save attachment as", suggested)
        return path

    @classmethod
    def warn(cls, parent: QWidget, text: str) -> None:
        QMessageBox.warning(parent, "Attachment", text)

    @classmethod
    def open(cls, parent: QWidget, att: Attachment, *, missing: bool) -> bool:
        """Hand the kept copy to the system's viewer; False (and a warning) when it is gone
        (`missing`, as the bubble shows it)."""
        if missing:
            cls.warn(parent, f"{att.filename}: file missing (the kept copy was deleted or changed)")
            return False
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(att.path)):
            cls.warn(parent, f"No application could open {att.filename}.")
            return False
        return True

    @classmethod
    def save_as(cls, parent: QWidget, att: Attachment) -> bool:
        target = cls.ask_save_path(parent, str(Path.home() / att.filename))
        if not target:
            return False
        try:
            save_copy(att, target)
        except AttachmentError as exc:
            cls.warn(parent, str(exc))
            return False
        return True
