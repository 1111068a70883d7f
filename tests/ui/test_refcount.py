"""Painting must not drain Python's reference counts (PySide6 6.12.0 did, and the app aborted)."""

from __future__ import annotations

import sys
from typing import Any

from desktop.core.models import ChatMessage, DeliveryState, Role
from desktop.ui.chat.view import ChatView

REPAINTS = 200


def test_repainting_the_chat_view_keeps_none_alive(qtbot: Any) -> None:
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(700, 500)
    view.show_messages(
        [
            ChatMessage(
                id=f"m{i}",
                role=Role.USER if i % 2 else Role.ASSISTANT,
                text=f"message {i} with **markdown** and `code`\n\n```py\nprint({i})\n```",
                delivery=DeliveryState.CONFIRMED if i % 2 else None,
            )
            for i in range(30)
        ]
    )
    view.grab()  # first paint builds caches; count from the steady state
    before = sys.getrefcount(None), sys.getrefcount(True), sys.getrefcount(False)
    for _ in range(REPAINTS):
        view.grab()
    after = sys.getrefcount(None), sys.getrefcount(True), sys.getrefcount(False)
    lost = [b - a for b, a in zip(before, after, strict=True)]
    # A leak of one reference per Qt call loses thousands here; a healthy build loses none.
    assert max(lost) < REPAINTS, f"references to None/True/False lost while painting: {lost}"
