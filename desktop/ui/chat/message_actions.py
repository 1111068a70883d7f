"""What can be done with one message: the actions of its context menu and their shortcuts."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QWidget

from desktop.core.models import ChatMessage, DeliveryState, Role
from desktop.ui.render.bubble_layout import BubbleLayout
from desktop.ui.shortcuts import SHORTCUTS, key_sequences

# Menu labels of the shared actions (the F1 table keeps the longer descriptions).
LABELS = {
    "copy": "Copy",
    "copy_markdown": "Copy as Markdown",
    "select_all": "Select all",
    "quote": "Quote in reply",
    "regenerate": "Regenerate reply",
    "resend": "Edit and resend",
    "branch": "Branch from here",
    "jump_newest": "Jump to newest",
}
_ZONE_LABELS = {
    "retry": "Retry sending",
    "edit": "Edit unsent message",
    "discard": "Discard",
    "retry_reply": "Retry",
}


class MessageActions(QObject):
    """One QAction per message shortcut, living on the chat view; the menu reuses them.

    Every action works on the view's current message, so the keyboard and the context menu
    do the same thing; a right click makes the clicked message current first.
    """

    def __init__(self, view: QWidget, handlers: dict[str, Callable[[], None]]) -> None:
        super().__init__(view)
        self.by_name: dict[str, QAction] = {}
        for sc in SHORTCUTS:
            if sc.scope != "messages":
                continue
            action = QAction(LABELS.get(sc.action, sc.description), view)
            action.setShortcuts(key_sequences(sc))
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            action.triggered.connect(handlers[sc.action])
            view.addAction(action)
            self.by_name[sc.action] = action

    def menu(
        self,
        parent: QWidget,
        msg: ChatMessage,
        lay: BubbleLayout,
        has_selection: bool,
        zone: Callable[[str, int], None],
        *,
        branch_limit: str = "",
    ) -> QMenu:
        """The context menu of one message: its text actions, then its bubble's buttons.

        The buttons painted in the bubble (copy code, thinking, tool cards, retry/edit/
        discard) are listed here too, so the keyboard reaches every one of them.
        `branch_limit` greys Branch from here with that reason (the gateway cannot branch).
        """
        menu = QMenu(parent)
        menu.setAccessibleName("Message actions")
        a = self.by_name
        a["copy"].setText("Copy selection" if has_selection else "Copy")
        if msg.text.strip():
            # A bubble without words (a reply that failed before any) has nothing to copy.
            menu.addAction(a["copy"])
            menu.addAction(a["copy_markdown"])
            menu.addAction(a["select_all"])
            menu.addSeparator()
            menu.addAction(a["quote"])
        # Only what applies to this message is listed; the shortcuts check the same when used.
        if msg.role is Role.ASSISTANT and not msg.streaming:
            menu.addAction(a["regenerate"])
        if msg.role is Role.USER and msg.delivery is not DeliveryState.FAILED:
            menu.addAction(a["resend"])
        if msg.text.strip() and not msg.streaming and msg.role in (Role.USER, Role.ASSISTANT):
            if branch_limit:
                # Greyed, with the gateway's reason: it showed once that it cannot branch.
                off = QAction(a["branch"].text(), menu)
                off.setEnabled(False)
                off.setToolTip(f"Not available: {branch_limit}")
                off.setStatusTip(off.toolTip())
                menu.setToolTipsVisible(True)
                menu.addAction(off)
            else:
                menu.addAction(a["branch"])
        extra: list[QAction] = []
        copies = 0
        for z in lay.zones:
            if z.kind == "copy":
                copies += 1
                label = f"Copy code block {copies}"
            elif z.kind == "thinking":
                label = "Show or hide thinking"
            elif z.kind == "tool":
                label = f"Show or hide tool {msg.tools[z.index].name}"
            elif z.kind == "attachment":
                label = f"Open {z.label}"
            elif z.kind == "changes":
                label = f"Show or hide changed files ({z.label})"
            elif z.kind == "change_file":
                label = f"Show or hide the diff of {z.label}"
            else:
                label = _ZONE_LABELS.get(z.kind, z.label or z.kind)
            action = QAction(label, menu)
            kind, index = z.kind, z.index
            action.triggered.connect(lambda _=False, k=kind, i=index: zone(k, i))
            extra.append(action)
            if z.kind == "attachment":
                save = QAction(f"Save {z.label} as…", menu)
                save.triggered.connect(lambda _=False, i=index: zone("save_attachment", i))
                extra.append(save)
        if extra:
            menu.addSeparator()
            for action in extra:
                menu.addAction(action)
        menu.addSeparator()
        menu.addAction(a["jump_newest"])  # listed with its shortcut: Ctrl+End
        return menu
