"""The agent's task list as a small checklist above the composer while a reply runs: a
heading with the count, one row per item (✓ done, ▸ now, ○ to do, ✗ dropped)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from desktop.core.models import TodoItem
from desktop.ui.render.usage import todo_text
from desktop.ui.render.wrap import ElidingLabel

MARKS = {"completed": "✓", "in_progress": "▸", "cancelled": "✗", "pending": "○"}
SAID = {
    "completed": "done",
    "in_progress": "in progress",
    "cancelled": "dropped",
    "pending": "to do",
}
# Rows shown at most; the rest are counted ("+3 more"), all of them in the tooltip.
MAX_ROWS = 6


class TodoChecklist(QWidget):
    """Shows `TodoItem`s while a reply runs; hidden when there are none or the turn is over."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("todoChecklist")
        self.setAccessibleName("Agent tasks")
        self._items: tuple[TodoItem, ...] = ()
        self._lay = QVBoxLayout(self)
        self._lay.setContentsMargins(20, 6, 16, 2)
        self._lay.setSpacing(0)
        self.heading = QLabel(self)
        self.heading.setObjectName("todoHeading")
        self._lay.addWidget(self.heading)
        self.rows: list[ElidingLabel] = []
        self.hide()

    def show_items(self, items: tuple[TodoItem, ...], running: bool) -> None:
        if items != self._items:
            self._items = items
            self._rebuild()
        self.setVisible(bool(items) and running)

    def _rebuild(self) -> None:
        for row in self.rows:
            self._lay.removeWidget(row)
            row.deleteLater()
        self.rows = []
        summary, tip = todo_text(self._items)
        live = [t for t in self._items if t.status != "cancelled"]
        done = sum(1 for t in live if t.status == "completed")
        self.heading.setText(f"Tasks · {done} of {len(live)} done")
        self.setToolTip(tip)
        self.setAccessibleDescription(summary)
        # The item in progress and those after it matter most while it runs: a long list
        # shows from the first one not done.
        start = next((i for i, t in enumerate(self._items) if t.status != "completed"), 0)
        start = max(0, min(start, len(self._items) - MAX_ROWS))
        shown = self._items[start : start + MAX_ROWS]
        for item in shown:
            row = ElidingLabel(f"{MARKS.get(item.status, '○')}  {item.content}", self)
            row.setObjectName("todoRow")
            row.setProperty("status", item.status)
            row.setAccessibleName(f"{item.content}: {SAID.get(item.status, 'to do')}")
            row.set_tip(item.content)
            row.setTextInteractionFlags(Qt.TextInteractionFlag.NoTextInteraction)
            self._lay.addWidget(row)
            self.rows.append(row)
        hidden = len(self._items) - len(shown)
        if hidden:
            more = ElidingLabel(f"+{hidden} more", self)
            more.setObjectName("todoRow")
            more.set_tip(tip)
            self._lay.addWidget(more)
            self.rows.append(more)
