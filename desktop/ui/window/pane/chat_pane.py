"""The chat pane: header, notice, find bar, messages, the agent's status lines, the pending
requests and the composer, stacked top to bottom."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QMimeData, Qt
from PySide6.QtWidgets import QVBoxLayout, QWidget

from desktop.core.models import SessionInfo
from desktop.ui.agent.todo_checklist import TodoChecklist
from desktop.ui.agent.work_panel import WorkPanel
from desktop.ui.chat.find_bar import FindBar
from desktop.ui.chat.view import ChatView
from desktop.ui.compose.composer import Composer, mime_files, mime_image_png
from desktop.ui.compose.queued_rows import QueuedRows
from desktop.ui.render.wrap import ElidingLabel, WrappingLabel
from desktop.ui.window.pane.approvals import ApprovalsPanel
from desktop.ui.window.pane.header import ChatHeader
from desktop.ui.window.pane.toast import Toast


def _status_line(name: str, parent: QWidget, accessible: str) -> ElidingLabel:
    label = ElidingLabel("", parent)
    label.setObjectName(name)
    label.setAccessibleName(accessible)
    label.setContentsMargins(20, 2, 16, 2)
    label.hide()
    return label


class ChatPane(QWidget):
    """Holds the open chat's widgets; the window fills them, they emit what the user wants."""

    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        at_start: bool = False,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("chatPane")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)  # the theme paints it
        self.header = ChatHeader(self, monotonic=monotonic, wall=wall)
        self.notice_label = WrappingLabel("", self)
        self.notice_label.setObjectName("noticeLabel")
        self.notice_label.setAccessibleName("Notice")
        self.notice_label.setWordWrap(True)
        self.notice_label.setContentsMargins(14, 6, 14, 6)
        self.notice_label.hide()
        self.chat_view = ChatView(self, at_start=at_start)  # (see ChatView)
        # Hermes' transient status text while a turn runs (each replaces the last).
        self.activity_label = _status_line("activityLabel", self, "Agent status")
        # The agent's task list (todo.updated, tool.complete.todos) while a reply runs.
        self.todo_list = TodoChecklist(self)
        # The subagents and background processes the agent started.
        self.work_panel = WorkPanel(self)
        self.approvals = ApprovalsPanel(self)
        self.queued_rows = QueuedRows(self)  # the follow-ups waiting behind the reply
        self.composer = Composer(self)
        self.queued_rows.set_focus_neighbours(self.chat_view, self.composer.attach_button)
        self.find_bar = FindBar(self)  # made last: after the composer in the focus chain
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        top: tuple[QWidget, ...] = (self.header, self.notice_label, self.find_bar)
        bottom: tuple[QWidget, ...] = (
            self.work_panel,
            self.todo_list,
            self.activity_label,
            self.approvals,
            self.queued_rows,
            self.composer,
        )
        for widget in top:
            lay.addWidget(widget)
        lay.addWidget(self.chat_view, 1)
        for widget in bottom:
            lay.addWidget(widget)
        self.toast = Toast(self, self.chat_view)  # floats: no row of its own

    def focus_chain(self) -> list[QWidget]:
        """Its focusable widgets in Tab order, for the window's own order."""
        return [
            self.chat_view,
            *self.composer.focus_chain(),
            self.header.connection.reconnect_button,
        ]

    def droppable(self, data: QMimeData) -> bool:
        """Whether dropped `data` is files or an image (attached wherever it is dropped)."""
        return bool(mime_files(data)) or data.hasImage()

    def attach_dropped(self, data: QMimeData) -> bool:
        """Attach the dropped files, else the dropped image; whether there was one."""
        files = mime_files(data)
        if files:
            self.composer.attach_files(files)
            return True
        png = mime_image_png(data)
        if png is None:
            return False
        self.composer.attach_image(png)
        return True

    def show_notice(self, text: str) -> None:
        """A notice under the header ("" hides it)."""
        self.notice_label.setText(text)
        self.notice_label.setVisible(bool(text))

    def show_status_lines(self, info: SessionInfo) -> None:
        """Above the composer: what the agent is doing, its task list and its other work."""
        self.activity_label.setText(info.activity)
        self.activity_label.setVisible(bool(info.activity))
        self.todo_list.show_items(info.todos, info.running)
        self.work_panel.show_work(info.subagents, info.processes)
