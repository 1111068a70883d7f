"""The app's keyboard shortcuts in one table, and the dialog that lists them."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)


@dataclass(frozen=True, slots=True)
class Shortcut:
    """One action's key sequences and what it does."""

    action: str
    keys: tuple[str, ...]
    description: str
    # "window"; "sessions": only while the chat list has focus; "messages": only while the
    # conversation has focus, acting on its current message; "numbered": window-wide, one key
    # per number, the handler given the key's place (0 for the first).
    scope: str = "window"
    shown: str = ""  # the keys as the dialog lists them, when not each key spelled out


SHORTCUTS: tuple[Shortcut, ...] = (
    Shortcut("new_chat", ("Ctrl+N",), "New chat"),
    Shortcut("switch_session", ("Ctrl+K",), "Switch session"),
    Shortcut("focus_composer", ("Ctrl+L",), "Focus the message box"),
    Shortcut("toggle_sidebar", ("Ctrl+B",), "Show or hide the chat list"),
    Shortcut("zoom_in", ("Ctrl+=", "Ctrl++"), "Larger text in the chat and the message box"),
    Shortcut("zoom_out", ("Ctrl+-",), "Smaller text"),
    Shortcut("zoom_reset", ("Ctrl+0",), "Text at its usual size"),
    Shortcut("search", ("Ctrl+F",), "Find in this chat (search chats when none is open)"),
    Shortcut("search_chats", ("Ctrl+Shift+F",), "Search all chats"),
    Shortcut("search_prompts", ("Ctrl+R",), "Search your earlier prompts (all chats)"),
    Shortcut("stop", ("Esc",), "Stop the running reply"),
    Shortcut("settings", ("Ctrl+,",), "Settings"),
    Shortcut("shortcuts", ("Ctrl+/", "F1"), "Keyboard shortcuts"),
    Shortcut("quit", ("Ctrl+Q",), "Quit (drafts are kept)"),
    Shortcut("export_session", ("Ctrl+Shift+S",), "Export the open chat (Markdown or JSON)"),
    Shortcut("new_tab", ("Ctrl+T",), "New chat in a new tab"),
    Shortcut("close_tab", ("Ctrl+W",), "Close the tab (its chat goes on)"),
    Shortcut("next_tab", ("Ctrl+Tab", "Ctrl+PgDown"), "Next tab"),
    Shortcut("previous_tab", ("Ctrl+Shift+Tab", "Ctrl+Shift+Backtab", "Ctrl+PgUp"), "Previous tab"),
    Shortcut(
        "go_to_tab",
        tuple(f"Ctrl+{n}" for n in range(1, 10)),
        "Go to tab 1 to 8; the last tab",
        "numbered",
        "Ctrl+1 … Ctrl+8; Ctrl+9",
    ),
    Shortcut("open_in_tab", ("Ctrl+Return",), "Open the selected chat in a new tab", "sessions"),
    Shortcut(
        "open_in_window",
        ("Ctrl+Shift+Return",),
        "Open the selected chat in a new window",
        "sessions",
    ),
    Shortcut("rename_session", ("F2",), "Rename the selected chat", "sessions"),
    Shortcut("delete_session", ("Del",), "Delete the selected chat", "sessions"),
    Shortcut("pin_session", ("Ctrl+Shift+P",), "Pin or unpin the selected chat", "sessions"),
    Shortcut(
        "archive_session", ("Ctrl+Shift+A",), "Archive or restore the selected chat", "sessions"
    ),
    Shortcut("copy", ("Ctrl+C",), "Copy the selected text, or the whole message", "messages"),
    Shortcut("copy_markdown", ("Ctrl+Shift+C",), "Copy the message as Markdown", "messages"),
    Shortcut("select_all", ("Ctrl+A",), "Select the message's text", "messages"),
    Shortcut("quote", ("Ctrl+Shift+Q",), "Quote the message (or selection) in a reply", "messages"),
    Shortcut("regenerate", ("Ctrl+Shift+R",), "Regenerate the reply", "messages"),
    Shortcut(
        "branch",
        ("Ctrl+Shift+B",),
        "Branch: a new chat with the messages up to this one",
        "messages",
    ),
    Shortcut("resend", ("Ctrl+Shift+E",), "Edit and resend your message", "messages"),
    Shortcut("older_version", ("Alt+Left",), "Show the reply's previous version", "messages"),
    Shortcut("newer_version", ("Alt+Right",), "Show the reply's next version", "messages"),
    Shortcut("message_menu", ("Shift+F10", "Menu"), "All actions of the message", "messages"),
    Shortcut("jump_newest", ("Ctrl+End",), "Jump to the newest message", "messages"),
)


def key_sequences(shortcut: Shortcut) -> list[QKeySequence]:
    """QKeySequence objects for a shortcut."""
    return [QKeySequence(k) for k in shortcut.keys]


class ShortcutsDialog(QDialog):
    """Lists every shortcut in SHORTCUTS."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.setAccessibleName("Keyboard shortcuts")
        self.table = QTableWidget(len(SHORTCUTS), 2, self)
        self.table.setAccessibleName("Shortcut list")
        self.table.setHorizontalHeaderLabels(["Action", "Keys"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for row, sc in enumerate(SHORTCUTS):
            self.table.setItem(row, 0, QTableWidgetItem(sc.description))
            native = sc.shown or " or ".join(
                QKeySequence(k).toString(QKeySequence.SequenceFormat.NativeText) for k in sc.keys
            )
            self.table.setItem(row, 1, QTableWidgetItem(native))
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        buttons.button(QDialogButtonBox.StandardButton.Close).setAccessibleName("Close")
        lay = QVBoxLayout(self)
        lay.addWidget(self.table)
        lay.addWidget(buttons)
        # Wide enough for both columns whole, tall enough for every row (within the screen).
        header = self.table.horizontalHeader()
        frame = 2 * self.table.frameWidth()
        scroll = self.table.verticalScrollBar().sizeHint().width()
        table_w = header.length() + frame + scroll + 24
        table_h = self.table.verticalHeader().length() + header.height() + frame
        margins = lay.contentsMargins()
        width = table_w + margins.left() + margins.right()
        height = table_h + buttons.sizeHint().height() + lay.spacing() + margins.top()
        height += margins.bottom()
        screen = self.screen().availableGeometry()
        self.resize(min(width, screen.width() - 40), min(height, screen.height() - 80))

    def rows(self) -> list[tuple[str, str]]:
        """(description, keys) as shown."""

        def text(row: int, col: int) -> str:
            item = self.table.item(row, col)
            return item.text() if item is not None else ""

        return [(text(r, 0), text(r, 1)) for r in range(self.table.rowCount())]
