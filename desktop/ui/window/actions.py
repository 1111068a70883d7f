"""The window's keyboard actions: one QAction per shortcut, on the window or the chat list."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QWidget

from desktop.ui.shortcuts import SHORTCUTS, key_sequences


def build_actions(
    window: QWidget,
    session_list: QWidget,
    handlers: Mapping[str, Callable[[], None]],
    numbered: Mapping[str, Callable[[int], None]],
) -> dict[str, QAction]:
    """Actions for every shortcut outside the chat view, each triggering its handler.

    "sessions" shortcuts act on the chat list's current chat and double as its context menu
    (Export too: a right click opens the chat first); the rest work anywhere in the window.
    A "numbered" shortcut is one action per key, its `numbered` handler given the key's place.
    """
    actions: dict[str, QAction] = {}
    for sc in SHORTCUTS:
        if sc.scope == "messages":
            continue  # the chat view's own actions, on its current message
        if sc.scope == "numbered":
            for place, keys in enumerate(key_sequences(sc)):
                each = QAction(f"{sc.description} ({place + 1})", window)
                each.setShortcut(keys)
                each.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
                each.triggered.connect(lambda _=False, h=numbered[sc.action], p=place: h(p))
                window.addAction(each)
                actions.setdefault(sc.action, each)
            continue
        action = QAction(sc.description, window)
        action.setShortcuts(key_sequences(sc))
        action.triggered.connect(handlers[sc.action])
        if sc.scope == "sessions":
            action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
            session_list.addAction(action)
        else:
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            window.addAction(action)
        actions[sc.action] = action
    session_list.addAction(actions["export_session"])
    return actions
