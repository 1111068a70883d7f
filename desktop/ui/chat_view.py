"""The virtualised chat view: a QListView of bubbles that sticks to the bottom while you read it."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QAbstractItemView, QListView, QWidget

from desktop.core.models import ChatMessage
from desktop.ui.chat_delegate import BubbleDelegate
from desktop.ui.chat_model import MessageListModel
from desktop.ui.links import LinkOpener
from desktop.ui.theme import Colors

BOTTOM_SLACK = 8


class ChatView(QListView):
    """Shows one session's messages; auto-scrolls only when the user is already at the bottom.

    Signals:
        action_requested(str, str): ("retry" | "edit" | "discard", message id).
        code_copied(str): a code block was copied.
    """

    action_requested = Signal(str, str)
    code_copied = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatView")
        self.setAccessibleName("Messages")
        self.setAccessibleDescription("The conversation; newest message at the bottom")
        self.chat_model = MessageListModel(self)
        self.bubbles = BubbleDelegate(self, self.chat_model)
        self.setModel(self.chat_model)
        self.setItemDelegate(self.bubbles)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.verticalScrollBar().setSingleStep(24)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # A scroll bar that comes and goes changes the width, and so every row's height.
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setUniformItemSizes(False)
        self.setLayoutMode(QListView.LayoutMode.SinglePass)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMouseTracking(False)
        self._at_bottom = True
        bar = self.verticalScrollBar()
        bar.valueChanged.connect(self._on_scrollbar_value_changed)
        bar.rangeChanged.connect(self._on_scrollbar_range_changed)
        self.chat_model.appended.connect(self._on_model_appended)
        self.bubbles.action_requested.connect(self.action_requested)
        self.bubbles.code_copied.connect(self.code_copied)
        self.bubbles.link_activated.connect(self._on_bubbles_link_activated)

    @property
    def at_bottom(self) -> bool:
        """Whether the view follows new content."""
        return self._at_bottom

    def set_colors(self, colors: Colors) -> None:
        """Repaint bubbles in another theme."""
        self.bubbles.set_colors(colors)
        self.scheduleDelayedItemsLayout()
        self.viewport().update()

    def show_messages(self, messages: list[ChatMessage]) -> None:
        """Replace the conversation and jump to its end."""
        self.bubbles.forget_expanded()
        self.bubbles.clear_cache()
        self.chat_model.reset(messages)
        self._at_bottom = True
        self.scrollToBottom()

    def update_message(self, message: ChatMessage) -> None:
        """A message arrived or changed (streaming deltas are coalesced by the model)."""
        self.chat_model.upsert(message)

    def remove_message(self, message_id: str) -> None:
        """A message was removed."""
        self.chat_model.remove(message_id)

    def _on_model_appended(self) -> None:
        if self._at_bottom:
            self.scrollToBottom()

    def _on_scrollbar_value_changed(self, value: int) -> None:
        self._at_bottom = value >= self.verticalScrollBar().maximum() - BOTTOM_SLACK

    def _on_scrollbar_range_changed(self, _low: int, high: int) -> None:
        if self._at_bottom:
            self.verticalScrollBar().setValue(high)

    def _on_bubbles_link_activated(self, href: str) -> None:
        LinkOpener.open(href)

    def resizeEvent(self, e: QResizeEvent) -> None:
        follow = self._at_bottom
        super().resizeEvent(e)
        self.bubbles.set_width(self.viewport().width())
        if follow:
            self.scrollToBottom()
