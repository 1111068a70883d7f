"""The virtualised chat view: bubbles laid out from a prefix-sum of heights, stuck to the bottom."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import zip_longest

from PySide6.QtCore import (
    QEvent,
    QItemSelection,
    QItemSelectionModel,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QPointF,
    QRect,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import (
    QAction,
    QClipboard,
    QColor,
    QContextMenuEvent,
    QCursor,
    QFocusEvent,
    QFont,
    QFontMetricsF,
    QGuiApplication,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QRegion,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QListView,
    QMenu,
    QStyleOptionViewItem,
    QWidget,
)

from desktop.common.memory import release_freed_memory
from desktop.core.models import (
    ChatMessage,
    ConnectionStatus,
    DeliveryState,
    Role,
)
from desktop.ui.chat.backdrop import Backdrop
from desktop.ui.chat.delegate import BubbleDelegate
from desktop.ui.chat.jump_button import MARGIN, JumpButton
from desktop.ui.chat.message_actions import MessageActions
from desktop.ui.chat.model import MessageListModel
from desktop.ui.chat.render_cache import Change, RenderCache
from desktop.ui.chat.text_selection import (
    END,
    Docs,
    TextSelection,
    everything,
    hit,
    moved,
    nearest,
    word_at,
)
from desktop.ui.chat.version_switch import showing, version_count
from desktop.ui.render.bubble_layout import BUBBLE_SHARE, PAD_H, ROW_MARGIN_H, waiting_text
from desktop.ui.render.links import LinkOpener
from desktop.ui.render.quoting import source_of
from desktop.ui.theme import Colors

BOTTOM_SLACK = 8
# How a selection over several messages names each one's part when copied.
ROLE_LABELS = {Role.USER: "You", Role.ASSISTANT: "Assistant", Role.SYSTEM: "System"}
# Older history is asked for this many screens before the top of what is loaded is reached.
PREFETCH_SCREENS = 3
RELEASE_MS = 300  # scrolling and rows paused this long: freed memory is handed back
# Rows this many screens above and below the view are drawn ahead in idle time, in slices of
# at most AHEAD_SLICE seconds, so a page step blits cached bubbles instead of laying them out.
AHEAD_SCREENS = 1
AHEAD_SLICE = 0.004
# While a reply grows on screen nothing is drawn ahead: a tile of a finished reply can take
# milliseconds to draw, and the reply's next words would wait for it. Whether the reply
# still grows is looked at again this often (ms); the rows are drawn ahead once it stops.
AHEAD_WAIT_STREAMING_MS = 250
SINGLE_STEP = 24
# Focus that came by the keyboard: the current message shows its ring (see ChatView._ring).
_KEYBOARD_FOCUS = (
    Qt.FocusReason.TabFocusReason,
    Qt.FocusReason.BacktabFocusReason,
    Qt.FocusReason.ShortcutFocusReason,
)
# Keys that move through the messages or act on the current one bring its ring back; a
# modifier alone (on the way to Ctrl+C after a mouse selection) or a shortcut does not, as a
# browser's :focus-visible.
_RING_KEYS = frozenset(
    {
        Qt.Key.Key_Up,
        Qt.Key.Key_Down,
        Qt.Key.Key_Left,
        Qt.Key.Key_Right,
        Qt.Key.Key_PageUp,
        Qt.Key.Key_PageDown,
        Qt.Key.Key_Home,
        Qt.Key.Key_End,
        Qt.Key.Key_Return,
        Qt.Key.Key_Enter,
        Qt.Key.Key_Space,
        Qt.Key.Key_Menu,
    }
)
_SHORTCUT_MODIFIERS = (
    Qt.KeyboardModifier.ControlModifier
    | Qt.KeyboardModifier.AltModifier
    | Qt.KeyboardModifier.MetaModifier
)
# ...and with one, only these: Ctrl+Left and Ctrl+Right move the selection by a word.
_WORD_KEYS = (Qt.Key.Key_Left, Qt.Key.Key_Right)


def _brings_ring_back(e: QKeyEvent) -> bool:
    """Whether a key press shows the current message's focus ring again."""
    key = e.key()
    return key in _RING_KEYS and (key in _WORD_KEYS or not e.modifiers() & _SHORTCUT_MODIFIERS)


# Passes of measuring the rows on screen before a paint: a measured row can change which rows
# are on screen, which are measured in the next pass.
MEASURE_PASSES = 4

_Index = QModelIndex | QPersistentModelIndex
_Hint = QAbstractItemView.ScrollHint
_Move = QAbstractItemView.CursorAction


@dataclass(frozen=True, slots=True)
class ReadingPlace:
    """Where a conversation was being read: the message at the top of the view and how far
    into it (pixels), or at the bottom, following new messages. Kept by message, not by
    scroll value, so it still holds once rows are measured again."""

    message_id: str
    offset: int
    at_bottom: bool


class ChatView(QListView):
    """Shows one session's messages; auto-scrolls only when the user is already at the bottom.

    QListView re-measures every row whenever one row's height changes (O(N): ~140 ms at
    10,000 rows). This view keeps the heights in a Fenwick tree instead and replaces QListView's
    layout, geometry and painting: a row's top, the row under a point and one row's new height
    are O(log N), and only rows on screen are ever laid out. It stays a QListView so keyboard
    navigation, mouse handling through the delegate and the accessible list come from Qt.

    Text is selected over the painted bubbles (TextSelection: drag, double click, Shift+arrows,
    Ctrl+A), one message at a time; only the bubble holding a selection is drawn live, every
    other row stays a cached pixmap. The current message (Up/Down) has a focus ring and its
    actions (MessageActions) are reached by shortcut, the Menu key or a right click.

    `at_start`: a view shown as the app starts; until its window's first paint it shows code
    plain and bare links as text rather than wait for their loads (`BubbleDelegate.
    finish_provisional`, see `MarkdownCache.provisional`).

    Signals:
        action_requested(str, str): ("retry" | "edit" | "discard" | "regenerate" | "resend" |
            "branch",
            message id).
        quote_requested(str, str): markdown to reply to in the composer, and whose it is.
        unavailable(str): an action asked by shortcut that this gateway cannot do, in words.
        code_copied(str): a code block was copied.
        text_copied(str): message text was copied (plain or markdown).
        older_wanted(), newer_wanted(): the next page of history is near the screen.
        live_end_wanted(): jump to newest while the newest rows were let go: the session is
            to be shown again from its live end.
    """

    action_requested = Signal(str, str)
    quote_requested = Signal(str, str)
    unavailable = Signal(str)
    code_copied = Signal(str)
    text_copied = Signal(str)
    older_wanted = Signal()
    newer_wanted = Signal()
    live_end_wanted = Signal()

    def __init__(self, parent: QWidget | None = None, *, at_start: bool = False) -> None:
        # Heights, layouts, pictures and documents: one owner, emptied by `invalidate` only.
        self.render_cache = RenderCache(at_start=at_start)
        self._branch_check: Callable[[], tuple[bool, str]] = lambda: (True, "")
        self._adjusting = False
        self._painting = False
        self._at_bottom = True
        # Rows at the newest end were let go (the user read far up): the newest message is
        # not loaded, jumping to it shows the session again from its live end.
        self._newest_let_go = False
        # The reading-width limit, in characters of the text size (0: the whole view).
        self._reading_chars = 0
        super().__init__(parent)
        self.setObjectName("chatView")
        self.setAccessibleName("Messages")
        self.setAccessibleDescription(
            "The conversation; newest message at the bottom. Up and Down move between "
            "messages, Enter or the Menu key opens a message's actions, Ctrl+C copies it"
        )
        self.chat_model = MessageListModel(self, self.render_cache.docs.markdown.plain_text)
        # Replies shown at an earlier version (< n/m >): the reply itself, by id.
        self._newest: dict[str, ChatMessage] = {}
        # Whether the current message shows its focus ring: after keys (Up/Down move it, Tab
        # comes in), not after a click, which shows by itself where it landed (as a browser's
        # :focus-visible); the frame's focus border shows either way.
        self._ring = True
        self.jump_button = JumpButton(self)
        self.jump_button.clicked.connect(self.jump_to_newest)
        # Runs only while rows near the view remain undrawn: idle means no timer.
        self._ahead = QTimer(self)
        self._ahead.setSingleShot(True)
        self._ahead.timeout.connect(self._prepare_ahead)
        # Armed by scrolling and by rows coming and going (a session opened, pages loaded or
        # let go): once that pauses, bubbles drawn beyond the view's reach are let go, and the
        # heap freed (rows, pages decoded, bubbles drawn and evicted) is handed back; the C
        # library keeps it otherwise, and the app would stay at its high-water mark. About
        # 0.3 ms. Idle means no timer.
        self._release = QTimer(self)
        self._release.setSingleShot(True)
        self._release.setInterval(RELEASE_MS)
        self._release.timeout.connect(self._at_rest)
        self.bubbles = BubbleDelegate(self, self.chat_model, self.render_cache)
        self.setModel(self.chat_model)
        self.setItemDelegate(self.bubbles)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # A scroll bar that comes and goes changes the width, and so every row's height.
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        # The view paints its own background: its viewport and scroll bar are opaque (and the
        # bar is its own: set up below).
        self._backdrop = Backdrop(self)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setUniformItemSizes(False)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMouseTracking(False)
        bar = self.verticalScrollBar()
        bar.setSingleStep(SINGLE_STEP)
        bar.valueChanged.connect(self._on_scrollbar_value_changed)
        bar.rangeChanged.connect(self._on_scrollbar_range_changed)
        self.chat_model.appended.connect(self._on_model_appended)
        self.chat_model.modelReset.connect(self._on_model_reset)
        self.chat_model.rowsRemoved.connect(self._on_model_reset)
        self.bubbles.action_requested.connect(self.action_requested)
        self.bubbles.code_copied.connect(self.code_copied)
        self.bubbles.version_step.connect(self.step_version)
        self.bubbles.link_activated.connect(self._on_bubbles_link_activated)
        self._selecting = False
        # Where a drag started (message id, text position): it may end in another message.
        self._drag: tuple[str, tuple[int, int]] | None = None
        # A selection over messages made by Shift+Up/Down: anchor, focus, and the span made.
        self._kb_selection: (
            tuple[str, tuple[int, int], str, tuple[int, int], dict[str, TextSelection]] | None
        ) = None
        # Every occurrence of the find term, top to bottom: (row, n-th occurrence in it).
        self._matches: list[tuple[int, int]] = []
        self.viewport().setMouseTracking(True)  # an I-beam over text, an arrow elsewhere
        self.message_actions = MessageActions(
            self,
            {
                "copy": self.copy,
                "copy_markdown": self.copy_markdown,
                "select_all": self.select_all,
                "quote": self.quote,
                "regenerate": lambda: self._request_current("regenerate"),
                "branch": lambda: self._request_current("branch"),
                "resend": lambda: self._request_current("resend"),
                "older_version": lambda: self._step_current(-1),
                "newer_version": lambda: self._step_current(1),
                "message_menu": self.show_message_menu,
                "jump_newest": self.jump_to_newest,
            },
        )

    # -- public surface ---------------------------------------------------------------------

    @property
    def at_bottom(self) -> bool:
        """Whether the view follows new content."""
        return self._at_bottom

    def set_colors(self, colors: Colors) -> None:
        """Repaint bubbles in another theme."""
        self._backdrop.forget()
        self.bubbles.set_colors(colors)
        self.render_cache.invalidate(Change.LOOK)
        self.jump_button.set_colors(colors)
        self.viewport().update()

    def set_text_size(self, points: float) -> None:
        """Draw the messages at this text size (zoom): every cached layout, picture and
        height is of the old size, so all are dropped; the message being read stays put."""
        if abs(self.font().pointSizeF() - points) < 0.01:
            return
        font = QFont(self.font())
        font.setPointSizeF(points)
        follow = self._at_bottom
        anchor, offset = self._anchor()
        self.setFont(font)
        self.render_cache.invalidate(Change.LOOK)
        self._rebuild()
        self._place(follow, anchor, offset)
        self.viewport().update()

    def set_reading_width(self, characters: int) -> None:
        """Keep the conversation in a centred column whose replies wrap at about this many
        characters (0: as wide as the view); it follows the text size."""
        characters = max(0, int(characters))
        if characters == self._reading_chars:
            return
        follow = self._at_bottom
        anchor, offset = self._anchor()
        self._reading_chars = characters
        self._rebuild()
        self._place(follow, anchor, offset)
        self.viewport().update()

    def column(self) -> tuple[int, int]:
        """Where the conversation's column starts in the viewport, and its width."""
        width = self.viewport().width()
        if not self._reading_chars:
            return 0, width
        measure = self._reading_chars * QFontMetricsF(self.font()).averageCharWidth()
        # A reply's bubble is its text plus padding; a bubble takes at most BUBBLE_SHARE of
        # the column inside the row margins (see bubble_max_width).
        wanted = round((measure + 2 * PAD_H) / BUBBLE_SHARE + 2 * ROW_MARGIN_H)
        column = max(1, min(width, wanted))
        return (width - column) // 2, column

    def show_messages(self, messages: list[ChatMessage]) -> None:
        """Replace the conversation and jump to its end."""
        self.bubbles.selection = None
        self.bubbles.span = {}
        self._drag = None
        self.bubbles.find_term = ""
        self.bubbles.match_row = -1
        self._matches = []
        self.bubbles.forget_expanded()
        self.render_cache.invalidate(Change.SESSION)
        self._newest.clear()
        self.chat_model.reset(messages)
        self._newest_let_go = False
        self.jump_button.set_replies(0)
        self._rebuild()
        self._place(True, -1, 0)
        self.viewport().update()
        self._release.start()
        self._want_older()

    def prepend_messages(self, messages: list[ChatMessage]) -> None:
        """Older messages go above the loaded ones; what is on screen stays where it is."""
        if not messages:
            return
        count = len(messages)
        follow = self._at_bottom
        anchor, offset = self._anchor()
        self.chat_model.prepend(messages)
        self._matches = [(row + count, k) for row, k in self._matches]
        if self.bubbles.match_row >= 0:
            self.bubbles.match_row += count
        self._rebuild()
        self._place(follow, anchor + count if anchor >= 0 else -1, offset)
        self.viewport().update()
        self._release.start()
        self._want_older()

    def append_messages(self, messages: list[ChatMessage]) -> None:
        """Newer messages (let go before, loaded again) go below the loaded ones; what is on
        screen stays where it is."""
        if not messages:
            return
        anchor, offset = self._anchor()
        self.chat_model.append_rows(messages)
        self._rebuild()
        self._place(False, anchor, offset)
        self.viewport().update()
        self._release.start()
        self._want_newer()

    def drop_messages(self, count: int, newest: bool) -> None:
        """Let the `count` newest (or oldest) rows go, far from the screen; what is on screen
        stays where it is."""
        follow = self._at_bottom and not newest
        anchor, offset = self._anchor()
        gone = self.chat_model.drop(count, newest)
        if not gone:
            return
        self._newest_let_go = self._newest_let_go or newest
        n = self.chat_model.rowCount()
        shift = 0 if newest else len(gone)
        self._matches = [(r - shift, k) for r, k in self._matches if 0 <= r - shift < n]
        if self.bubbles.match_row >= 0:
            row = self.bubbles.match_row - shift
            self.bubbles.match_row = row if 0 <= row < n else -1
        sel = self.bubbles.selection
        if sel is not None and sel.message_id in gone:
            self.bubbles.selection = None
        self.bubbles.forget_rows(gone)
        self._rebuild()
        self._place(follow, anchor - shift, offset)
        self._update_focus_row()
        self.viewport().update()
        self._release.start()

    def set_link_status(self, status: ConnectionStatus) -> None:
        """The chat's link came, went or was paused: a reply still streaming says, under its
        text, that the rest waits and for what (`waiting_text`; the header says the rest)."""
        note = waiting_text(status.state)
        if note == self.bubbles.link_note:
            return
        self.bubbles.link_note = note
        for msg in self.chat_model.messages():
            if msg.streaming:
                self.chat_model.touch(msg.id)

    def live_end_joined(self) -> None:
        """The rows loaded back reached the live end: the newest message is loaded again, so
        jumping to it just scrolls, and the button shows only more than a screen up."""
        self._newest_let_go = False
        self.jump_button.set_replies(0)  # the replies it counted are among the rows loaded
        self._update_jump()

    def newer_waiting(self, replies: int) -> None:
        """Replies came at the live end while its rows are let go: the button counts them."""
        self.jump_button.set_replies(replies)

    def shown_text(self, message_id: str, chars: int) -> str | None:
        """About the first `chars` characters of a message's text as it is shown (laid out
        already: read from its documents, no markdown parsed), or None when it is not laid
        out (a screen reader's announcement of a reply that just finished: parsing its start
        took milliseconds in the frame showing its last words)."""
        row = self.chat_model.row_of(message_id)
        if row is None or not self.bubbles.is_laid_out(self.chat_model.index(row)):
            return None
        lay = self.bubbles.layout_for(self.chat_model.index(row))
        parts: list[str] = []
        for doc, _at in lay.text_docs():
            parts.append(doc.toPlainText().strip())
            if sum(map(len, parts)) >= chars:
                break
        return "\n".join(p for p in parts if p)

    @property
    def drawing_ahead(self) -> bool:
        """Whether bubbles near the view are still being drawn in idle slices (a timer runs)."""
        return self._ahead.isActive()

    def _reach(self) -> tuple[int, int, int, int]:
        """Rows of the view's reach: the first drawn ahead above, the first and last on
        screen, the last drawn ahead below (as laid out; the model may be ahead or behind)."""
        rows = self.render_cache.rows
        value = self.verticalScrollBar().value()
        screen = self.viewport().height()
        return (
            rows.row_at(value - AHEAD_SCREENS * screen),
            rows.row_at(value),
            rows.row_at(value + screen),
            rows.row_at(value + screen + AHEAD_SCREENS * screen),
        )

    def _at_rest(self) -> None:
        """Scrolling and rows paused: only the bubbles in reach stay drawn (a jump far up
        or down leaves the ones where the view was), and the heap freed goes back."""
        if len(self.render_cache.rows):
            first, _top, _bottom, last = self._reach()
            model = self.chat_model
            reach = range(max(first, 0), min(last + 1, model.rowCount()))
            self.render_cache.keep_drawn({model.message_at(r).id for r in reach})
        release_freed_memory()

    def _prepare_ahead(self) -> None:
        """Draw the nearest undrawn rows around the view, for one short slice of time."""
        n = len(self.render_cache.rows)
        if not n or not self.isVisible():
            return
        first, top, bottom, last = self._reach()
        above = range(top - 1, first - 1, -1)
        below = range(bottom + 1, last + 1)
        order = [r for pair in zip_longest(above, below) for r in pair if r is not None]
        model = self.chat_model
        shown = range(top, min(bottom + 1, model.rowCount()))  # the model may be ahead or behind
        if any(model.message_at(r).streaming for r in shown):
            self._ahead.start(AHEAD_WAIT_STREAMING_MS)
            return
        deadline = time.perf_counter() + AHEAD_SLICE
        for row in order:
            index = self.chat_model.index(row)
            if self.bubbles.is_prepared(index):
                continue
            if time.perf_counter() > deadline or not self.bubbles.prepare(index, deadline):
                self._ahead.start(0)  # more to draw: after the events that are waiting
                return

    def _want_older(self) -> None:
        """Ask for older history while the top of what is loaded is a few screens away."""
        if self.chat_model.rowCount() and (
            self.verticalScrollBar().value() < PREFETCH_SCREENS * self.viewport().height()
        ):
            self.older_wanted.emit()

    def _want_newer(self) -> None:
        """Ask for newer history (let go while reading far up) while the bottom of what is
        loaded is a few screens away; nothing comes when the live end is loaded."""
        bar = self.verticalScrollBar()
        if self.chat_model.rowCount() and (
            bar.maximum() - bar.value() < PREFETCH_SCREENS * self.viewport().height()
        ):
            self.newer_wanted.emit()

    def update_message(self, message: ChatMessage) -> None:
        """A message arrived or changed (streaming deltas are coalesced by the model)."""
        self._newest.pop(message.id, None)  # a changed reply shows as it now is
        self.chat_model.upsert(message)

    def step_version(self, message_id: str, delta: int) -> None:
        """Show the reply's previous (-1) or next (+1) version (< n/m >)."""
        row = self.chat_model.row_of(message_id)
        if row is None:
            return
        msg = self.chat_model.message_at(row)
        n, m = version_count(msg)
        target = max(1, min(m, n + delta))
        if target == n:
            return
        newest = self._newest.pop(message_id, msg)
        if target < m:
            self._newest[message_id] = newest
        self.chat_model.upsert(showing(newest, target))
        self._show_prompt_of(row, newest, target)
        self.chat_model.flush()

    def _show_prompt_of(self, row: int, newest: ChatMessage, n: int) -> None:
        """The prompt above a reply shown at version `n` reads as the prompt that version
        answered (an edit-and-resend changed it)."""
        above = (self.chat_model.message_at(r) for r in range(row - 1, -1, -1))
        prompt = next((p for p in above if p.role is Role.USER), None)
        if prompt is None:
            return
        asked = newest.versions[n - 1].prompt if n <= len(newest.versions) else ""
        current = self._newest.get(prompt.id, prompt)
        if asked.strip() and asked.strip() != current.text.strip():
            self._newest[prompt.id] = current
            self.chat_model.upsert(replace(current, text=asked))
        elif prompt.id in self._newest:
            self.chat_model.upsert(self._newest.pop(prompt.id))

    def remove_message(self, message_id: str) -> None:
        """A message was removed."""
        sel = self.bubbles.selection
        if sel is not None and sel.message_id == message_id:
            self.bubbles.selection = None
        self.chat_model.remove(message_id)

    # -- selection and message actions ------------------------------------------------------

    @property
    def actions_by_name(self) -> dict[str, QAction]:
        """The message actions (copy, quote, regenerate, ...) by shortcut name."""
        return self.message_actions.by_name

    @property
    def selection(self) -> TextSelection | None:
        """The selected text's ends, if text inside one message is selected."""
        sel = self.bubbles.selection
        return sel if sel is not None and not sel.empty else None

    def messages(self) -> Sequence[ChatMessage]:
        """The messages shown, oldest first (a view: do not modify)."""
        return self.chat_model.messages()

    def message(self, message_id: str) -> ChatMessage | None:
        """The shown message with this id, if it is loaded."""
        row = self.chat_model.row_of(message_id)
        return self.chat_model.message_at(row) if row is not None else None

    def current_message(self) -> ChatMessage | None:
        """The message the keyboard is on (the last one if none was chosen)."""
        row = self.currentIndex().row()
        if not 0 <= row < self.chat_model.rowCount():
            row = self.chat_model.rowCount() - 1
        return self.chat_model.message_at(row) if row >= 0 else None

    def selected_text(self) -> str:
        """The selected text as plain text ("" when nothing is selected); over several
        messages, each one's part in order after its role ("You:", "Assistant:")."""
        if self.bubbles.span:
            return self._span_text()
        sel = self.selection
        row = self.chat_model.row_of(sel.message_id) if sel is not None else None
        if sel is None or row is None:
            return ""
        return sel.text(self.bubbles.layout_for(self.chat_model.index(row)).text_docs())

    def select_text(self, message_id: str, anchor: tuple[int, int], focus: tuple[int, int]) -> None:
        """Select text inside one message (document index, position) to (index, position)."""
        if self.bubbles.span:
            self.bubbles.span = {}
            self.viewport().update()
        self.bubbles.selection = TextSelection(message_id, anchor, focus)
        self._repaint_message(message_id)

    def select_across(
        self, anchor_id: str, anchor: tuple[int, int], focus_id: str, focus: tuple[int, int]
    ) -> None:
        """Select from a position in one message to a position in another: the messages
        between are selected whole."""
        rows = self.chat_model.row_of(anchor_id), self.chat_model.row_of(focus_id)
        if rows[0] is None or rows[1] is None:
            return
        if rows[0] == rows[1]:
            self.select_text(anchor_id, anchor, focus)
            return
        (top, top_spot), (bottom, bottom_spot) = sorted(
            [(rows[0], anchor), (rows[1], focus)], key=lambda pair: pair[0]
        )
        span: dict[str, TextSelection] = {}
        for row in range(top, bottom + 1):
            mid = self.chat_model.message_at(row).id
            start = top_spot if row == top else (0, 0)
            stop = bottom_spot if row == bottom else END
            span[mid] = TextSelection(mid, start, stop)
        self.bubbles.selection = None
        self.bubbles.span = span
        self.viewport().update()

    def _span_text(self) -> str:
        parts: list[str] = []
        for mid, sel in self.bubbles.span.items():  # top to bottom
            row = self.chat_model.row_of(mid)
            if row is None or sel.empty:
                continue
            msg = self.chat_model.message_at(row)
            text = sel.text(self.bubbles.layout_for(self.chat_model.index(row)).text_docs())
            if text.strip():
                parts.append(f"{ROLE_LABELS.get(msg.role, msg.role.value)}: {text.strip()}")
        return "\n\n".join(parts)

    def clear_selection(self) -> None:
        if self.bubbles.span:
            self.bubbles.span = {}
            self.viewport().update()
        sel, self.bubbles.selection = self.bubbles.selection, None
        if sel is not None:
            self._repaint_message(sel.message_id)

    def select_all(self) -> None:
        """Select the whole text of the current message."""
        msg = self.current_message()
        if msg is None:
            return
        docs = self._docs(msg.id)
        self.select_text(msg.id, *everything(docs))

    def copy(self) -> None:
        """Copy the selection, or the current message's text without markdown marks."""
        text = self.selected_text()
        if not text:
            msg = self.current_message()
            text = self.render_cache.docs.markdown.plain_text(msg.text) if msg is not None else ""
        if text:
            QGuiApplication.clipboard().setText(text)
            self.text_copied.emit(text)

    def copy_markdown(self) -> None:
        """Copy the current message's text as written (markdown)."""
        msg = self.current_message()
        if msg is not None and msg.text:
            QGuiApplication.clipboard().setText(msg.text)
            self.text_copied.emit(msg.text)

    def quote(self) -> None:
        """Reply to the selection, or the current message, in the composer: its markdown
        as written (a selection inside a code block comes in its fence)."""
        sel = self.selection
        msg = self.message(sel.message_id) if sel is not None else None
        if sel is not None and msg is not None:
            text = source_of(self.selected_text(), msg.text)
        elif self.bubbles.span:
            text, msg = self.selected_text(), None  # several messages, each after its role
        else:
            msg = self.current_message()
            text = msg.text if msg is not None else ""
        if text.strip():
            who = ROLE_LABELS.get(msg.role, msg.role.value) if msg is not None else "a selection"
            self.quote_requested.emit(text, who)

    def _step_current(self, delta: int) -> None:
        msg = self.current_message()
        if msg is not None and msg.versions:
            self.step_version(msg.id, delta)

    def _request_current(self, kind: str) -> None:
        msg = self.current_message()
        if msg is None:
            return
        if kind == "regenerate" and (msg.role is not Role.ASSISTANT or msg.streaming):
            return
        if kind == "resend" and (msg.role is not Role.USER or msg.delivery is DeliveryState.FAILED):
            return  # a failed prompt is taken back with its own Edit button instead
        if kind == "branch" and (not msg.text.strip() or msg.streaming):
            return
        if kind == "branch" and (limit := self._branch_limit()):
            self.unavailable.emit(f"Branch from here is not available: {limit}")
            return
        self.action_requested.emit(kind, msg.id)

    @classmethod
    def exec_menu(cls, menu: QMenu, pos: QPoint) -> QAction | None:
        """Run a context menu (patched in tests); the chosen action has already run."""
        return menu.exec(pos)

    def message_menu(self, row: int) -> QMenu:
        """The context menu of the message in `row` (making it current)."""
        index = self.chat_model.index(row)
        self.setCurrentIndex(index)
        msg = self.chat_model.message_at(row)
        sel = self.selection
        has_selection = (
            sel is not None and sel.message_id == msg.id
        ) or msg.id in self.bubbles.span
        if sel is not None and not has_selection:
            self.clear_selection()
        return self.message_actions.menu(
            self,
            msg,
            self.bubbles.layout_for(index),
            has_selection,
            lambda kind, n: self.bubbles.activate(msg, kind, n),
            branch_limit=self._branch_limit(),
        )

    def set_branch_check(self, check: Callable[[], tuple[bool, str]]) -> None:
        """Where to ask whether the shown chat's gateway can branch (and why not)."""
        self._branch_check = check

    def _branch_limit(self) -> str:
        ok, why = self._branch_check()
        return "" if ok else why

    def show_message_menu(self) -> None:
        """The current message's menu, under its bubble's top-left corner (keyboard)."""
        msg = self.current_message()
        row = self.chat_model.row_of(msg.id) if msg is not None else None
        if row is None:
            return
        self.scrollTo(self.chat_model.index(row))
        rect = self.visualRect(self.chat_model.index(row))
        lay = self.bubbles.layout_for(self.chat_model.index(row))
        corner = rect.topLeft() + lay.bubble.topLeft().toPoint() + QPoint(12, 12)
        self._run_menu(row, self.viewport().mapToGlobal(corner))

    def _run_menu(self, row: int, pos: QPoint) -> None:
        menu = self.message_menu(row)
        try:
            self.exec_menu(menu, pos)
        finally:
            menu.deleteLater()

    def _docs(self, message_id: str) -> Docs:
        row = self.chat_model.row_of(message_id)
        if row is None:
            return []
        return self.bubbles.layout_for(self.chat_model.index(row)).text_docs()

    def _repaint_message(self, message_id: str) -> None:
        row = self.chat_model.row_of(message_id)
        if row is not None:
            self.viewport().update(self.visualRect(self.chat_model.index(row)))

    def _text_spot(self, pos: QPoint, exact: bool) -> tuple[int, tuple[int, int] | None]:
        """The row under a viewport point and the text position there (None: not on text)."""
        index = self.indexAt(pos)
        if not index.isValid():
            return -1, None
        local = QPointF(pos - self.visualRect(index).topLeft())
        lay = self.bubbles.layout_for(index)
        if exact and self.bubbles.on_zone_or_link(lay, local):
            return index.row(), None
        return index.row(), hit(lay.text_docs(), local)

    # -- find in chat -----------------------------------------------------------------------

    def find_text(self, term: str) -> int:
        """Highlight `term` in every message; returns how many times it occurs (each
        occurrence is one match, as highlighted: in the text as shown, without markdown)."""
        folded = term.strip().casefold()
        self.bubbles.find_term = folded
        self.bubbles.match_row = -1
        self.bubbles.match_nth = -1
        self._matches = []
        if folded:
            plain = self.render_cache.docs.markdown.plain_text
            for row, m in enumerate(self.chat_model.messages()):
                if folded in m.text.casefold():  # the cheap test first: most rows hold nothing
                    count = plain(m.text).casefold().count(folded)
                    self._matches.extend((row, k) for k in range(count))
        self.viewport().update()
        return len(self._matches)

    @property
    def matches(self) -> list[tuple[int, int]]:
        """Every occurrence of the find term, top to bottom: (row, n-th occurrence in it)."""
        return list(self._matches)

    def first_match_in(self, row: int) -> int:
        """The number of the first match in `row` (-1: none there)."""
        for n, (r, _k) in enumerate(self._matches):
            if r == row:
                return n
        return -1

    def show_match(self, n: int) -> int:
        """Scroll match `n` (wrapping) into the middle of the view and mark it; returns n."""
        if not self._matches:
            return -1
        n %= len(self._matches)
        row, k = self._matches[n]
        self.bubbles.match_nth = k
        self.jump_to_row(row, lambda: self._occurrence_y(row, k))
        return n

    def _occurrence_y(self, row: int, k: int) -> float | None:
        """How far below its row's top the line holding occurrence `k` of the find term is
        (its middle); None when the laid-out text holds fewer occurrences."""
        term = self.bubbles.find_term
        seen = 0
        for doc, at in self.bubbles.layout_for(self.chat_model.index(row)).text_docs():
            cursor = doc.find(term, 0)
            while not cursor.isNull():
                if seen == k:
                    block = cursor.block()
                    line = block.layout().lineForTextPosition(
                        cursor.selectionStart() - block.position()
                    )
                    top = doc.documentLayout().blockBoundingRect(block).top()
                    y = top + (line.y() + line.height() / 2 if line.isValid() else 0)
                    return at.y() + y
                seen += 1
                cursor = doc.find(term, cursor)
        return None

    def jump_to_row(self, row: int, spot: Callable[[], float | None] | None = None) -> None:
        """Centre a message, make it current and mark it (a search hit or find match);
        `spot` says how far below the row's top the line to centre is (a match in a long
        message), None: the whole row centred."""
        if not 0 <= row < self.chat_model.rowCount():
            return
        index = self.chat_model.index(row)
        self._at_bottom = False
        self.setCurrentIndex(index)  # first: a new current row is scrolled into view
        self._centre(row, spot)
        # The rows around it were estimates until now: centre again once they are measured.
        self._ensure_layout()
        self._centre(row, spot)
        self._at_bottom = (
            self.verticalScrollBar().value() >= self.verticalScrollBar().maximum() - BOTTOM_SLACK
        )
        self.bubbles.match_row = row
        self.viewport().update()

    def _centre(self, row: int, spot: Callable[[], float | None] | None) -> None:
        y = spot() if spot is not None else None
        if y is None:
            self.scrollTo(self.chat_model.index(row), _Hint.PositionAtCenter)
            return
        top = self.render_cache.rows.top(row)
        self.verticalScrollBar().setValue(int(top + y - self.viewport().height() / 2))

    def reading_place(self) -> ReadingPlace | None:
        """Where the conversation is being read now (None: no messages)."""
        if not self.chat_model.rowCount() or not len(self.render_cache.rows):
            return None
        if self._at_bottom:
            return ReadingPlace("", 0, True)
        row, offset = self._anchor()
        if not 0 <= row < self.chat_model.rowCount():
            return None
        return ReadingPlace(self.chat_model.message_at(row).id, offset, False)

    def go_to_place(self, place: ReadingPlace) -> bool:
        """Read from `place` again (the conversation just shown): its message back at the top
        of the view, as far into it as it was; whether it is loaded (else the view stays at
        the bottom)."""
        if place.at_bottom:
            return True
        row = self.chat_model.row_of(place.message_id)
        if row is None:
            return False
        self._ensure_layout()
        self._place(False, row, place.offset)
        self._ensure_layout()  # the rows now on screen measured, the anchor kept in place
        self.viewport().update()
        return True

    def first_position(self, key: str) -> int | None:
        """Where the first loaded message sits in the whole history of session `key`, read from
        its id (`key:position`); None when the ids do not say (e.g. a local bubble first)."""
        return self._position(key, 0)

    def last_position(self, key: str) -> int | None:
        """Where the last loaded message sits in the whole history of session `key` (see
        `first_position`); None when its id does not say (a live reply, a local bubble)."""
        return self._position(key, self.chat_model.rowCount() - 1)

    def _position(self, key: str, row: int) -> int | None:
        """The history position in the id (`key:position`) of the message at `row`, or None."""
        if not 0 <= row < self.chat_model.rowCount():
            return None
        prefix = f"{key}:"
        message_id = self.chat_model.message_at(row).id
        tail = message_id[len(prefix) :] if message_id.startswith(prefix) else ""
        return int(tail) if tail.isdigit() else None

    def row_of_hit(self, idx: int | None, term: str, key: str = "") -> int:
        """The row of a search hit: the message at its stored position (by id when the history
        is paged, else by row), checked against the matched term."""
        folded = term.casefold()
        messages = self.chat_model.messages()
        if idx is not None and key:
            row = self.chat_model.row_of(f"{key}:{idx}")
            if row is not None and (not folded or folded in messages[row].text.casefold()):
                return row
        if (
            idx is not None
            and 0 <= idx < len(messages)
            and (not folded or folded in messages[idx].text.casefold())
        ):
            return idx
        rows = [i for i, m in enumerate(messages) if folded and folded in m.text.casefold()]
        if not rows:
            return -1
        target = idx if idx is not None else len(messages)
        return min(rows, key=lambda r: abs(r - target))

    def clear_find(self) -> None:
        """Forget the find term and the marked match."""
        self.find_text("")

    # -- heights ----------------------------------------------------------------------------

    def _rebuild(self) -> None:
        """Every row's height from its estimate or last measurement (open, resize, theme)."""
        self.bubbles.set_width(self.column()[1])
        self.render_cache.rows.reset(self.bubbles.row_heights())
        self.render_cache.rows_stale = False

    def _ensure_layout(self) -> None:
        """Measure the rows on screen, keeping the bottom (or the first row shown) in place."""
        bar = self.verticalScrollBar()
        follow = self._at_bottom
        if (
            self.render_cache.rows_stale
            or len(self.render_cache.rows) != self.chat_model.rowCount()
        ):
            anchor, offset = self._anchor()
            self._rebuild()
            self._place(follow, anchor, offset)
        if not len(self.render_cache.rows):
            return
        anchor, offset = self._anchor()
        view_h = self.viewport().height()
        for _ in range(MEASURE_PASSES):
            changed = False
            value = bar.value()
            row = self.render_cache.rows.row_at(value)
            n = len(self.render_cache.rows)
            top = self.render_cache.rows.top(row)
            while row < n and top < value + view_h:
                height = self.bubbles.measure(self.chat_model.index(row))
                if self.render_cache.rows.set(row, height):
                    changed = True
                top += height
                row += 1
            if not changed:
                break
            self._place(follow, anchor, offset)

    def _anchor(self) -> tuple[int, int]:
        value = self.verticalScrollBar().value()
        row = self.render_cache.rows.row_at(value)
        return row, value - self.render_cache.rows.top(row) if row >= 0 else 0

    def _place(self, follow: bool, anchor: int, offset: int) -> None:
        """Set the scroll range and put the bottom, or the anchor row, back where it was."""
        bar = self.verticalScrollBar()
        self._adjusting = True
        try:
            self._update_range()
            if follow:
                bar.setValue(bar.maximum())
            elif 0 <= anchor < len(self.render_cache.rows):
                bar.setValue(self.render_cache.rows.top(anchor) + offset)
        finally:
            self._adjusting = False
        self._at_bottom = follow or bar.value() >= bar.maximum() - BOTTOM_SLACK
        self._update_jump()

    def _update_range(self) -> None:
        bar = self.verticalScrollBar()
        view_h = self.viewport().height()
        bar.setPageStep(view_h)
        bar.setRange(0, max(0, self.render_cache.rows.total - view_h))

    # -- QAbstractItemView ------------------------------------------------------------------

    def doItemsLayout(self) -> None:
        # Never QListView's: that walks every row. Heights are re-read only when needed.
        if len(self.render_cache.rows) != self.chat_model.rowCount():
            self.render_cache.rows_stale = True
        QAbstractItemView.doItemsLayout(self)

    def updateGeometries(self) -> None:
        if (
            self.render_cache.rows_stale
            or len(self.render_cache.rows) != self.chat_model.rowCount()
        ):
            self._ensure_layout()
        self._update_range()
        QAbstractItemView.updateGeometries(self)

    def reset(self) -> None:
        self.render_cache.rows_stale = True
        QAbstractItemView.reset(self)

    def rowsInserted(self, parent: _Index, start: int, end: int) -> None:
        if (
            not parent.isValid()
            and start == len(self.render_cache.rows)
            and not self.render_cache.rows_stale
        ):
            follow = self._at_bottom
            for row in range(start, end + 1):
                msg = self.chat_model.message_at(row)
                self.render_cache.rows.append(self.bubbles.row_height(msg))
            self._place(follow, *self._anchor())
        else:
            self.render_cache.rows_stale = True
        QAbstractItemView.rowsInserted(self, parent, start, end)
        self.viewport().update()

    def dataChanged(self, topLeft: _Index, bottomRight: _Index, roles: Sequence[int] = ()) -> None:
        # A changed row on screen is measured now (the model publishes at most once per frame):
        # if its height held, only that row is repainted; otherwise the rows move and all are.
        # Rows off screen are measured when they next come on screen (see _ensure_layout).
        QAbstractItemView.dataChanged(self, topLeft, bottomRight, list(roles))
        if self.render_cache.rows_stale or not self.isVisible():
            self.viewport().update()
            return
        area = self.viewport().rect()
        moved = False
        anchor, offset = self._anchor()
        for row in range(
            max(0, topLeft.row()), min(len(self.render_cache.rows), bottomRight.row() + 1)
        ):
            rect = self.visualRect(self.chat_model.index(row))
            if not rect.intersects(area):
                continue
            if self.render_cache.rows.set(row, self.bubbles.measure(self.chat_model.index(row))):
                moved = True
            else:
                self.viewport().update(rect)
        if moved:
            self._place(self._at_bottom, anchor, offset)
            self.viewport().update()

    def visualRect(self, index: _Index) -> QRect:
        row = index.row() if index.isValid() else -1
        if not 0 <= row < len(self.render_cache.rows):
            return QRect()
        y = self.render_cache.rows.top(row) - self.verticalScrollBar().value()
        left, width = self.column()
        return QRect(left, y, width, self.render_cache.rows.height(row))

    def indexAt(self, p: QPoint) -> QModelIndex:
        y = p.y() + self.verticalScrollBar().value()
        if y < 0 or y >= self.render_cache.rows.total or not 0 <= p.x() < self.viewport().width():
            return QModelIndex()
        return self.chat_model.index(self.render_cache.rows.row_at(y))

    def scrollTo(self, index: _Index, hint: _Hint = _Hint.EnsureVisible) -> None:
        row = index.row() if index.isValid() else -1
        if not 0 <= row < len(self.render_cache.rows):
            return
        bar = self.verticalScrollBar()
        top = self.render_cache.rows.top(row)
        bottom = top + self.render_cache.rows.height(row)
        view_h = self.viewport().height()
        value = bar.value()
        if hint == _Hint.PositionAtTop or (hint == _Hint.EnsureVisible and top < value):
            value = top
        elif hint == _Hint.PositionAtBottom or (
            hint == _Hint.EnsureVisible and bottom > value + view_h
        ):
            value = min(top, bottom - view_h)
        elif hint == _Hint.PositionAtCenter:
            value = (top + bottom - view_h) // 2
        bar.setValue(value)

    def moveCursor(self, cursorAction: _Move, modifiers: Qt.KeyboardModifier) -> QModelIndex:
        n = len(self.render_cache.rows)
        if n == 0:
            return QModelIndex()
        current = self.currentIndex()
        view_h = self.viewport().height()
        if not current.isValid() and cursorAction not in (_Move.MoveHome, _Move.MoveEnd):
            # The first key press lands on a message on screen, never on one above or below
            # it: Up (and Page Up) on the last one whose end shows, Down on the first.
            up = cursorAction in (
                _Move.MoveUp,
                _Move.MovePrevious,
                _Move.MoveLeft,
                _Move.MovePageUp,
            )
            return self.chat_model.index(self._edge_row_on_screen(last=up))
        row = max(current.row(), 0)
        if cursorAction in (_Move.MoveUp, _Move.MovePrevious, _Move.MoveLeft):
            row -= 1
        elif cursorAction in (_Move.MoveDown, _Move.MoveNext, _Move.MoveRight):
            row = row + 1 if current.isValid() else row
        elif cursorAction == _Move.MovePageUp:
            row = self.render_cache.rows.row_at(self.render_cache.rows.top(row) - view_h)
        elif cursorAction == _Move.MovePageDown:
            row = self.render_cache.rows.row_at(self.render_cache.rows.top(row) + view_h)
        elif cursorAction == _Move.MoveHome:
            row = 0
        elif cursorAction == _Move.MoveEnd:
            row = n - 1
        return self.chat_model.index(max(0, min(n - 1, row)))

    def _edge_row_on_screen(self, last: bool) -> int:
        """The last row on screen whose bottom shows (last) or the first whose top shows;
        the row under that edge of the view when no row fits whole."""
        rows = self.render_cache.rows
        value = self.verticalScrollBar().value()
        bottom = value + self.viewport().height()
        top_row = rows.row_at(value)
        bottom_row = rows.row_at(max(value, bottom - 1))
        if last:
            if bottom_row > top_row and rows.top(bottom_row) + rows.height(bottom_row) > bottom:
                return bottom_row - 1
            return bottom_row
        if top_row < bottom_row and rows.top(top_row) < value:
            return top_row + 1
        return top_row

    def horizontalOffset(self) -> int:
        return 0

    def verticalOffset(self) -> int:
        return self.verticalScrollBar().value()

    def isIndexHidden(self, index: _Index) -> bool:
        return False

    def setSelection(self, rect: QRect, command: QItemSelectionModel.SelectionFlag) -> None:
        return  # NoSelection: bubbles are not selectable

    def visualRegionForSelection(self, selection: QItemSelection) -> QRegion:
        return QRegion()

    def scrollContentsBy(self, dx: int, dy: int) -> None:
        # Every row is a cached pixmap: repainting the viewport costs a few blits. A scroll
        # made while measuring rows inside paintEvent is painted by that same paint.
        if not self._painting:
            self.viewport().update()

    # -- events -----------------------------------------------------------------------------

    EMPTY_HINT = "Type below to start a conversation.\nCtrl+N new chat  ·  F1 shortcuts"

    def _paint_empty(self, painter: QPainter) -> None:
        """An empty chat says what to do, in the muted text colour; nothing is animated."""
        painter.setPen(QColor(self.bubbles.colors.muted))
        painter.drawText(self.viewport().rect(), Qt.AlignmentFlag.AlignCenter, self.EMPTY_HINT)

    def paintEvent(self, e: QPaintEvent) -> None:
        before = self.verticalScrollBar().value()
        self._painting = True
        try:
            self._ensure_layout()
        finally:
            self._painting = False
        if self.verticalScrollBar().value() != before and e.rect() != self.viewport().rect():
            self.viewport().update()  # the rows moved outside the region this paint may touch
        n = len(self.render_cache.rows)
        clip = e.rect()
        painter = QPainter(self.viewport())
        self._backdrop.paint(painter, clip)
        if n == 0:
            self._paint_empty(painter)
            painter.end()
            return
        option = QStyleOptionViewItem()
        self.initViewItemOption(option)
        value = self.verticalScrollBar().value()
        left, width = self.column()
        row = self.render_cache.rows.row_at(value + clip.top())
        top = self.render_cache.rows.top(row) - value
        try:
            while row < n and top < clip.bottom() + 1:
                height = self.render_cache.rows.height(row)
                option.rect = QRect(left, top, width, height)
                self.bubbles.paint(painter, option, self.chat_model.index(row))
                top += height
                row += 1
        finally:
            painter.end()
            self.chat_model.paint_done()
            if not self._ahead.isActive():
                self._ahead.start(0)

    def mousePressEvent(self, e: QMouseEvent) -> None:
        self._ring = False  # a click shows where it landed: no keyboard ring (see _ring)
        pos = e.position().toPoint()
        if e.button() != Qt.MouseButton.LeftButton:
            if e.button() == Qt.MouseButton.RightButton:
                return  # the context menu follows; it keeps the selection
            super().mousePressEvent(e)
            return
        row, spot = self._text_spot(pos, exact=True)
        if spot is None:
            self.clear_selection()
            super().mousePressEvent(e)
            return
        msg = self.chat_model.message_at(row)
        self.setFocus(Qt.FocusReason.MouseFocusReason)
        self.setCurrentIndex(self.chat_model.index(row))
        sel = self.bubbles.selection
        shift = bool(e.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        if shift and sel is not None and sel.message_id == msg.id:
            self.select_text(msg.id, sel.anchor, spot)
        else:
            self.clear_selection()
            self.bubbles.selection = TextSelection(msg.id, spot, spot)
        sel = self.bubbles.selection
        self._drag = (sel.message_id, sel.anchor) if sel is not None else None
        self._selecting = True
        e.accept()

    def mouseMoveEvent(self, e: QMouseEvent) -> None:
        pos = e.position().toPoint()
        if self._selecting and self._drag is not None:
            anchor_id, anchor = self._drag
            if self.chat_model.row_of(anchor_id) is None:
                return
            # Dragging past the viewport's edge scrolls, so a long reply can be selected whole.
            height = self.viewport().height()
            if pos.y() < 0 or pos.y() > height:
                step = SINGLE_STEP if pos.y() > 0 else -SINGLE_STEP
                self.verticalScrollBar().setValue(self.verticalScrollBar().value() + step)
            # The message under the pointer (the nearest one past the view's edges or the end).
            under = QPoint(
                max(0, min(pos.x(), self.viewport().width() - 1)), max(0, min(pos.y(), height - 1))
            )
            index = self.indexAt(under)
            row = index.row() if index.isValid() else self.chat_model.rowCount() - 1
            msg = self.chat_model.message_at(row)
            rect = self.visualRect(self.chat_model.index(row))
            spot = nearest(self._docs(msg.id), QPointF(pos - rect.topLeft()))
            self.select_across(anchor_id, anchor, msg.id, spot)
            return
        if not e.buttons():
            _row, hovered = self._text_spot(pos, exact=True)
            shape = (
                Qt.CursorShape.IBeamCursor if hovered is not None else Qt.CursorShape.ArrowCursor
            )
            if self.viewport().cursor().shape() != shape:
                self.viewport().setCursor(QCursor(shape))
            return
        super().mouseMoveEvent(e)

    def mouseReleaseEvent(self, e: QMouseEvent) -> None:
        if self._selecting:
            self._selecting = False
            text = self.selected_text()
            clipboard = QGuiApplication.clipboard()
            if text and clipboard.supportsSelection():
                clipboard.setText(text, QClipboard.Mode.Selection)  # X11 middle-click paste
            e.accept()
            return
        super().mouseReleaseEvent(e)

    def mouseDoubleClickEvent(self, e: QMouseEvent) -> None:
        row, spot = self._text_spot(e.position().toPoint(), exact=True)
        if spot is None or e.button() != Qt.MouseButton.LeftButton:
            super().mouseDoubleClickEvent(e)
            return
        msg = self.chat_model.message_at(row)
        self.select_text(msg.id, *word_at(self._docs(msg.id), spot))
        sel = self.bubbles.selection
        self._drag = (msg.id, sel.anchor) if sel is not None else None
        self._selecting = True
        e.accept()

    def contextMenuEvent(self, e: QContextMenuEvent) -> None:
        if e.reason() == QContextMenuEvent.Reason.Mouse:
            index = self.indexAt(e.pos())
            if index.isValid():
                self._run_menu(index.row(), e.globalPos())
            return
        self.show_message_menu()

    def keyPressEvent(self, e: QKeyEvent) -> None:
        mods = e.modifiers()
        if _brings_ring_back(e):
            self._ring = True
        self._update_focus_row()
        shift = bool(mods & Qt.KeyboardModifier.ShiftModifier)
        msg = self.current_message()
        if shift and msg is not None and self.currentIndex().isValid():
            by_word = bool(mods & Qt.KeyboardModifier.ControlModifier)
            if self._extend_selection(msg, e.key(), by_word):
                return
        if e.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and msg is not None:
            self.show_message_menu()
            return
        if e.key() == Qt.Key.Key_Escape and (self.selection is not None or self.bubbles.span):
            self.clear_selection()
            return
        super().keyPressEvent(e)

    def _extend_selection(self, msg: ChatMessage, key: int, by_word: bool) -> bool:
        """Shift+arrow: move the selection's end; Shift+Up/Down past a message's first or last
        line carry it into the message above or below, whole (the current one follows)."""
        kb = self._kb_selection
        if kb is not None and self.bubbles.span is kb[4] and self.bubbles.span:
            anchor_id, anchor, focus_id, focus = kb[:4]
        else:
            sel = self.bubbles.selection
            if sel is None or sel.message_id != msg.id:
                sel = TextSelection(msg.id, (0, 0), (0, 0))
            anchor_id, anchor, focus_id, focus = msg.id, sel.anchor, msg.id, sel.focus
        spot = moved(self._docs(focus_id), focus, key, by_word)
        if spot is None:
            return False
        if spot == focus and key in (Qt.Key.Key_Up, Qt.Key.Key_Down):
            step = -1 if key == Qt.Key.Key_Up else 1
            edge = everything(self._docs(focus_id))[0 if step < 0 else 1]
            row, anchor_row = self.chat_model.row_of(focus_id), self.chat_model.row_of(anchor_id)
            if spot != edge:
                spot = edge  # first to this message's start or end, as an editor does
            elif row is None or anchor_row is None:
                return True
            elif not 0 <= row + step < self.chat_model.rowCount():
                return True  # the first or last message: the selection stays
            else:
                row += step
                focus_id = self.chat_model.message_at(row).id
                # Growing, the next message joins whole; shrinking, it leaves whole.
                grows = row < anchor_row if step < 0 else row > anchor_row
                spot = everything(self._docs(focus_id))[(step > 0) == grows]
                self.setCurrentIndex(self.chat_model.index(row))
                self.scrollTo(self.currentIndex())
        if focus_id == anchor_id:
            self.select_text(anchor_id, anchor, spot)
            self._kb_selection = None
        else:
            self.select_across(anchor_id, anchor, focus_id, spot)
            self._kb_selection = (anchor_id, anchor, focus_id, spot, self.bubbles.span)
        return True

    def currentChanged(self, current: _Index, previous: _Index) -> None:
        super().currentChanged(current, previous)
        self._update_focus_row()

    def focusInEvent(self, e: QFocusEvent) -> None:
        if e.reason() in _KEYBOARD_FOCUS:
            self._ring = True
        elif e.reason() == Qt.FocusReason.MouseFocusReason:
            self._ring = False
        super().focusInEvent(e)
        self._restyled()
        self._update_focus_row()

    def focusOutEvent(self, e: QFocusEvent) -> None:
        super().focusOutEvent(e)
        self._restyled()
        self._update_focus_row()

    def changeEvent(self, e: QEvent) -> None:
        super().changeEvent(e)
        if e.type() in (QEvent.Type.StyleChange, QEvent.Type.PaletteChange):
            self._restyled()

    def _restyled(self) -> None:
        """The frame's look changed (the theme's focus border): the background under the
        rows takes its corners again."""
        self._backdrop.forget()
        self.viewport().update()

    def _update_focus_row(self) -> None:
        row = self.currentIndex().row() if self.hasFocus() and self._ring else -1
        old, self.bubbles.focus_row = self.bubbles.focus_row, row
        if old != row:
            self.viewport().update()

    def resizeEvent(self, e: QResizeEvent) -> None:
        QAbstractItemView.resizeEvent(self, e)
        self._backdrop.forget()
        if e.size().width() != e.oldSize().width():
            self.render_cache.rows_stale = True
        self.viewport().update()
        self._update_jump()

    # -- jump to newest ---------------------------------------------------------------------

    def jump_to_newest(self) -> None:
        """Show the newest message (Ctrl+End, the floating button): at once when it is
        loaded, else by asking for the live end (`live_end_wanted`), which shows it."""
        self.jump_button.set_replies(0)
        if self._newest_let_go:
            self.live_end_wanted.emit()  # answered by show_messages, at the end
            return
        n = self.chat_model.rowCount()
        if not n:
            return
        # Current first: making a row current scrolls to its top, and a tall newest reply
        # must be shown to its end.
        self.setCurrentIndex(self.chat_model.index(n - 1))
        self._place(True, -1, 0)
        self._ensure_layout()
        self._place(True, -1, 0)
        self.viewport().update()

    def _update_jump(self) -> None:
        """The jump button shows while the newest message is more than a screen below (or
        not loaded at all); at the bottom it goes, with its count of replies."""
        bar = self.verticalScrollBar()
        view_h = self.viewport().height()
        far = bar.maximum() - bar.value() > view_h or (self._newest_let_go and not self._at_bottom)
        far = far and self.chat_model.rowCount() > 0
        if not far and self._at_bottom:
            self.jump_button.set_replies(0)
        button = self.jump_button
        if far:
            area = self.viewport().geometry()
            button.move(
                area.right() - MARGIN - button.width(), area.bottom() - MARGIN - button.height()
            )
            button.raise_()
        button.setVisible(far)

    # -- slots ------------------------------------------------------------------------------

    def _on_model_reset(self) -> None:
        self.render_cache.rows_stale = True
        self.viewport().update()

    def _on_model_appended(self) -> None:
        if self._at_bottom:
            self.scrollToBottom()
            return
        n = self.chat_model.rowCount()
        if n and self.chat_model.message_at(n - 1).role is Role.ASSISTANT:
            # A reply came while the user reads up: the jump button says so.
            self.jump_button.set_replies(self.jump_button.replies + 1)
        self._update_jump()

    def _on_scrollbar_value_changed(self, value: int) -> None:
        if not self._adjusting:
            self._at_bottom = value >= self.verticalScrollBar().maximum() - BOTTOM_SLACK
            self._want_older()
            self._want_newer()
            self._release.start()
            self._update_jump()

    def _on_scrollbar_range_changed(self, _low: int, high: int) -> None:
        if self._adjusting:
            return  # _place sets the value and updates the jump button once it is done
        if self._at_bottom:
            self.verticalScrollBar().setValue(high)
        self._update_jump()

    def _on_bubbles_link_activated(self, href: str) -> None:
        LinkOpener.open(href)
