"""The session list: model, filter over titles and message text, and a compact row delegate."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRectF,
    QSize,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPainterPath, QPalette
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from desktop.core.models import SessionSummary
from desktop.ui.backend import HIT_END, HIT_START, SearchHit
from desktop.ui.platform.resources import icon
from desktop.ui.render.dates import day_and_month, weekday

SESSION_ROLE = Qt.ItemDataRole.UserRole + 1
KEY_ROLE = Qt.ItemDataRole.UserRole + 2
# While searching: the snippet of the row's best match (HIT_START/HIT_END around the terms).
SNIPPET_ROLE = Qt.ItemDataRole.UserRole + 3
NEW_CHAT_TITLE = "New chat"  # the title core gives a chat until its first prompt
_Index = QModelIndex | QPersistentModelIndex


def relative_time(then: float, now: float) -> str:
    """Short relative age: 'now', '5m', '3h', 'Mon', '12 Mar'."""
    if then <= 0:
        return ""
    age = max(0.0, now - then)
    if age < 60:
        return "now"
    if age < 3600:
        return f"{int(age // 60)}m"
    if age < 86400:
        return f"{int(age // 3600)}h"
    if age < 7 * 86400:
        return weekday(then)
    return day_and_month(then)


class SessionListModel(QAbstractListModel):
    """Rows of SessionSummary, replaced wholesale when the backend sends a new list."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[SessionSummary] = []
        self.generation = 0  # counts replacements of the rows (SessionFilter caches by it)

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 - Qt's default
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        s = self._rows[index.row()]
        if role == SESSION_ROLE:
            return s
        if role == KEY_ROLE:
            return s.key
        if role == Qt.ItemDataRole.DisplayRole:
            return s.title or "New chat"
        if role == Qt.ItemDataRole.AccessibleTextRole:
            extra = f", {s.unread} unread" if s.unread else ""
            marks = (", pinned" if s.pinned else "") + (", archived" if s.archived else "")
            return f"{s.title or 'New chat'}{marks}{extra}{', running' if s.running else ''}"
        return None

    def set_sessions(self, sessions: list[SessionSummary]) -> None:
        """Replace all rows."""
        self.beginResetModel()
        self._rows = list(sessions)
        self.generation += 1
        self.endResetModel()

    def rows(self) -> list[SessionSummary]:
        """Every row, in list order (the model's own list: do not change it)."""
        return self._rows

    def keys(self) -> list[str]:
        """Every listed session's key, in list order."""
        return [s.key for s in self._rows]

    def row_of(self, key: str) -> int | None:
        """Row of a session key, or None."""
        for i, s in enumerate(self._rows):
            if s.key == key:
                return i
        return None

    def session(self, key: str) -> SessionSummary | None:
        """The summary for a key."""
        row = self.row_of(key)
        return None if row is None else self._rows[row]


def best_hits(hits: list[SearchHit]) -> dict[str, SearchHit]:
    """One hit per session, in rank order: a message match (it can be jumped to) over a title."""
    best: dict[str, SearchHit] = {}
    for hit in hits:
        old = best.get(hit.session_key)
        if old is None or (old.source == "title" and hit.source == "message"):
            best[hit.session_key] = hit
    return best


def snippet_runs(snippet: str) -> list[tuple[str, bool]]:
    """A snippet as (text, is_match) runs, whitespace folded to single spaces."""
    runs: list[tuple[str, bool]] = []
    text = " ".join(snippet.split())
    for i, part in enumerate(text.split(HIT_START)):
        if i == 0:
            runs.append((part, False))
            continue
        hit, _, rest = part.partition(HIT_END)
        runs += [(hit, True), (rest, False)]
    return [(t, m) for t, m in runs if t]


def is_empty_chat(s: SessionSummary) -> bool:
    """A new chat nothing was said or typed in yet (untitled, no messages, no preview)."""
    untitled = s.title in ("", NEW_CHAT_TITLE)
    return untitled and not s.preview and not s.message_count and not s.running


class SessionFilter(QSortFilterProxyModel):
    """Filters by title, or by the sessions whose text matched (from backend.search_hits).

    Without a query it shows the chats not archived, or (in the Archived view) only the
    archived ones; a query finds archived chats too. While a query is active each row also
    answers SNIPPET_ROLE with its best match.
    """

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._query = ""
        self._matches: frozenset[str] = frozenset()
        self.hits: dict[str, SearchHit] = {}
        self._hidden: frozenset[str] = frozenset()
        self._deleting: frozenset[str] = frozenset()
        self.archived_view = False
        # Which source rows pass, worked out for all rows at once when the filter or the rows
        # change: Qt asks row by row, and a Python test per call made 10,000 chats ~80 ms a
        # query; a list lookup per call is what remains (~10 ms).
        self._accepted: list[bool] = []
        self._accepted_for: tuple[int, int] = (-1, -1)  # (source id, its generation)

    def set_deleting(self, keys: set[str]) -> None:
        """Leave out the chats deleted and still undoable (the gateway is not told yet)."""
        if frozenset(keys) == self._deleting:
            return
        self.beginFilterChange()
        self._accepted_for = (-1, -1)
        self._deleting = frozenset(keys)
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def set_archived_view(self, on: bool) -> None:
        """List the archived chats (on) or the others (off)."""
        if on == self.archived_view:
            return
        self.beginFilterChange()
        self._accepted_for = (-1, -1)
        self.archived_view = on
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def set_hidden(self, keys: set[str]) -> None:
        """Leave the chats `keys` out of the list (empty new chats the user left)."""
        if frozenset(keys) == self._hidden:
            return
        self.beginFilterChange()
        self._accepted_for = (-1, -1)
        self._hidden = frozenset(keys)
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def set_query(
        self, query: str, matching_keys: list[str], hits: dict[str, SearchHit] | None = None
    ) -> None:
        """Show sessions whose title contains `query` or whose key is in `matching_keys`."""
        self.beginFilterChange()
        self._accepted_for = (-1, -1)
        self._query = query.strip().casefold()
        self._matches = frozenset(matching_keys)
        self.hits = dict(hits or {}) if self._query else {}
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role in (SNIPPET_ROLE, Qt.ItemDataRole.AccessibleTextRole) and self.hits:
            hit = self.hits.get(str(super().data(index, KEY_ROLE) or ""))
            if role == SNIPPET_ROLE:
                return hit.snippet if hit is not None else None
            if hit is not None:
                found = "".join(t for t, _ in snippet_runs(hit.snippet))
                return f"{super().data(index, role)}, found: {found}"
        return super().data(index, role)

    def filterAcceptsRow(self, row: int, parent: _Index) -> bool:
        source = self.sourceModel()
        if not isinstance(source, SessionListModel):
            return self._accepts(source.index(row, 0, parent).data(SESSION_ROLE))
        if self._accepted_for != (id(source), source.generation):
            self._accepted = [self._accepts(s) for s in source.rows()]
            self._accepted_for = (id(source), source.generation)
        return self._accepted[row]

    def _accepts(self, s: SessionSummary) -> bool:
        if s.key in self._hidden or s.key in self._deleting:
            return False
        if not self._query:
            return s.archived == self.archived_view
        return self._query in (s.title or "").casefold() or s.key in self._matches


class SessionDelegate(QStyledItemDelegate):
    """Two-line rows: title and time, preview and unread badge; a static mark while running."""

    ROW_H = 60

    def __init__(self, parent: QObject | None = None, now: Callable[[], float] = time.time) -> None:
        super().__init__(parent)
        self._now = now
        self.tint = ""  # the line icons' colour on a dark theme ("" for their own)

    def sizeHint(self, option: QStyleOptionViewItem, index: _Index) -> QSize:
        return QSize(200, self.ROW_H)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: _Index) -> None:
        s: SessionSummary | None = index.data(SESSION_ROLE)
        if s is None:
            return
        pal: QPalette = option.palette
        r = QRectF(option.rect).adjusted(6, 2, -6, -2)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        hovered = bool(option.state & QStyle.StateFlag.State_MouseOver)
        if selected or hovered:
            bg = QColor(pal.color(QPalette.ColorRole.Highlight))
            bg.setAlphaF(0.16 if selected else 0.07)
            path = QPainterPath()
            path.addRoundedRect(r, 10, 10)
            painter.fillPath(path, bg)
        text_color = pal.color(QPalette.ColorRole.Text)
        muted = pal.color(QPalette.ColorRole.PlaceholderText)
        font = QFont(option.font)
        bold = QFont(font)
        bold.setWeight(QFont.Weight.DemiBold)
        inner = r.adjusted(12, 8, -12, -8)
        when = relative_time(s.updated_at, self._now())
        fm = QFontMetrics(font)
        when_w = fm.horizontalAdvance(when) + 4
        mark_w = 18 if s.running else 0
        pin_w = 18 if s.pinned else 0
        if s.pinned:
            icon("pin", self.tint).paint(
                painter, QRectF(inner.left(), inner.top() + 3, 14, 14).toRect()
            )
        title_rect = QRectF(
            inner.left() + pin_w, inner.top(), inner.width() - when_w - mark_w - pin_w, 20
        )
        painter.setFont(bold)
        painter.setPen(text_color)
        title = QFontMetrics(bold).elidedText(
            s.title or "New chat", Qt.TextElideMode.ElideRight, int(title_rect.width())
        )
        painter.drawText(title_rect, Qt.AlignmentFlag.AlignVCenter, title)
        if s.running:
            icon("running").paint(
                painter, QRectF(title_rect.right() + 2, inner.top() + 3, 14, 14).toRect()
            )
        painter.setFont(font)
        painter.setPen(muted)
        painter.drawText(
            QRectF(inner.right() - when_w, inner.top(), when_w, 20),
            Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
            when,
        )
        badge_w = 0.0
        if s.unread:
            label = str(s.unread) if s.unread < 100 else "99+"
            badge_w = max(20.0, fm.horizontalAdvance(label) + 12)
            badge = QRectF(inner.right() - badge_w, inner.bottom() - 19, badge_w, 19)
            path = QPainterPath()
            path.addRoundedRect(badge, 9.5, 9.5)
            painter.fillPath(path, pal.color(QPalette.ColorRole.Highlight))
            painter.setPen(pal.color(QPalette.ColorRole.HighlightedText))
            painter.drawText(badge, Qt.AlignmentFlag.AlignCenter, label)
        preview_rect = QRectF(inner.left(), inner.bottom() - 20, inner.width() - badge_w - 6, 20)
        painter.setPen(muted)
        snippet = index.data(SNIPPET_ROLE)
        if snippet:
            self._draw_snippet(
                painter, preview_rect, snippet, font, muted=muted, text_color=text_color, pal=pal
            )
        else:
            preview = fm.elidedText(
                " ".join(s.preview.split()), Qt.TextElideMode.ElideRight, int(preview_rect.width())
            )
            painter.drawText(preview_rect, Qt.AlignmentFlag.AlignVCenter, preview)
        painter.restore()

    @staticmethod
    def _draw_snippet(
        painter: QPainter,
        rect: QRectF,
        snippet: str,
        font: QFont,
        *,
        muted: QColor,
        text_color: QColor,
        pal: QPalette,
    ) -> None:
        """The search snippet with its matched terms bold on a highlight, elided at the end."""
        bold = QFont(font)
        bold.setWeight(QFont.Weight.Bold)
        mark = QColor(pal.color(QPalette.ColorRole.Highlight))
        mark.setAlphaF(0.28)
        x = rect.left()
        for text, hit in snippet_runs(snippet):
            fm = QFontMetrics(bold if hit else font)
            room = rect.right() - x
            if room <= fm.horizontalAdvance("…"):
                break
            shown = fm.elidedText(text, Qt.TextElideMode.ElideRight, int(room))
            width = fm.horizontalAdvance(shown)
            run = QRectF(x, rect.top(), width, rect.height())
            if hit:
                path = QPainterPath()
                path.addRoundedRect(run.adjusted(-2, 2, 2, -2), 4, 4)
                painter.fillPath(path, mark)
            painter.setFont(bold if hit else font)
            painter.setPen(text_color if hit else muted)
            painter.drawText(run, Qt.AlignmentFlag.AlignVCenter, shown)
            x += width
            if shown != text:
                break
        painter.setFont(font)
