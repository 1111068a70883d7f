"""Finding in the open chat: the find bar's matches, and landing on a chat search's hit."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QObject, Qt

from desktop.ui.backend import ChatBackend, SearchHit
from desktop.ui.chat.find_bar import FindBar
from desktop.ui.chat.view import ChatView
from desktop.ui.sessions.session_list import snippet_runs


class Hits(Protocol):
    """Where a chat search's hits come from (the main window's chat list)."""

    def hit(self, key: str) -> SearchHit | None: ...
    def query(self) -> str: ...


class ChatFinder(QObject):
    """Steps the find bar through the chat view's matches; shows a search hit of the sidebar
    (a chat's own window: of the main window's list, once a hit there is chosen for it).

    A hit is shown again when the gateway's history replaces the cached one just shown (a
    reset), and, when it is older than a paged history's loaded window, once the older pages
    holding it arrive.
    """

    def __init__(self, find_bar: FindBar, view: ChatView, sidebar: Hits | None) -> None:
        super().__init__(find_bar)
        self._bar = find_bar
        self._view = view
        self._sidebar = sidebar
        self._match = -1
        # The session whose hit is shown again when its history is replaced, and whether it
        # waits for older pages of a paged history.
        self._pending_hit: tuple[str, bool] | None = None
        find_bar.query_changed.connect(self._on_find_bar_query_changed)
        find_bar.step.connect(self._on_find_bar_step)
        find_bar.closed.connect(self._on_find_bar_closed)

    def reset(self) -> None:
        """Another chat opened: no find bar, no hit waiting."""
        self._pending_hit = None
        self._bar.hide()
        self._match = -1

    def open(self) -> None:
        """Ctrl+F: the find bar, on the newest match of what it holds."""
        self._bar.open()
        self._on_find_bar_query_changed(self._bar.query())

    def jump_to_hit(self, backend: ChatBackend, key: str, hits: Hits | None = None) -> None:
        """Show the search hit of session `key` (the open one): its message centred, the terms
        highlighted; `hits` the list it was chosen in, when not this finder's own."""
        if hits is not None:
            self._sidebar = hits
        shown = self._show_hit(backend, key)
        self._pending_hit = (key, shown == "older") if shown else None

    def history_reset(self, backend: ChatBackend, key: str) -> None:
        """The open chat's history was replaced (e.g. the snapshot replaced the cached one)."""
        if self._pending_hit is not None and self._pending_hit[0] == key:
            self.jump_to_hit(backend, key)

    def older_arrived(self, backend: ChatBackend, key: str) -> None:
        """Older pages of the open chat arrived: the hit waiting for them is shown."""
        if self._pending_hit == (key, True):
            self.jump_to_hit(backend, key)

    def _show_hit(self, backend: ChatBackend, key: str) -> str:
        """Show the hit if it is loaded: "landed"; else ask for older pages: "older"; "" when
        there is no message hit to show (or no chat list: a chat's own window)."""
        if self._sidebar is None:
            return ""
        hit = self._sidebar.hit(key)
        query = self._sidebar.query()
        if hit is None or not query:
            return ""
        terms = [t for t, match in snippet_runs(hit.snippet) if match]
        term = terms[0] if terms else query
        idx = hit.message_idx if hit.source == "message" else None
        view = self._view
        last = view.last_position(key)
        if idx is not None and last is not None and idx > last:
            # Newer than a window far up (its newer rows let go): from the live end again.
            view.show_messages(backend.open_session(key))
        first = view.first_position(key)
        if idx is not None and first is not None and idx < first:
            backend.load_older(key)  # answered by older_arrived
            return "older"
        row = view.row_of_hit(idx, term, key)
        # The whole query when it appears as typed, else the word the index matched.
        self._bar.show_found(query if view.find_text(query) else term)
        first = view.first_match_in(row) if row >= 0 else -1
        if first >= 0:
            self._match = view.show_match(first)
        elif row >= 0:
            view.jump_to_row(row)
        self._bar.set_count(self._match + 1, len(view.matches))
        return "landed" if idx is not None else ""

    def _on_find_bar_query_changed(self, text: str) -> None:
        total = self._view.find_text(text)
        # A new term starts at the newest match, as the conversation is read from the bottom.
        self._match = self._view.show_match(total - 1) if total else -1
        self._bar.set_count(self._match + 1, total)

    def _on_find_bar_step(self, direction: int) -> None:
        total = len(self._view.matches)
        if total:
            self._match = self._view.show_match(self._match + direction)
        self._bar.set_count(self._match + 1, total)

    def _on_find_bar_closed(self) -> None:
        self._pending_hit = None
        self._view.clear_find()
        self._match = -1
        self._view.setFocus(Qt.FocusReason.OtherFocusReason)
