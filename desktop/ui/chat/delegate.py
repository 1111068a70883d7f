"""Paints chat bubbles and handles clicks inside them (copy, expand, retry/edit/discard, links)."""

from __future__ import annotations

import math
import time
from typing import Any

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QPointF,
    QRect,
    QRectF,
    QSize,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QColor,
    QFont,
    QFontMetricsF,
    QGuiApplication,
    QMouseEvent,
    QPainter,
    QPainterPath,
    QPalette,
    QPen,
    QPixmap,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
)
from PySide6.QtWidgets import QListView, QStyledItemDelegate, QStyleOptionViewItem

from desktop.core.models import ChatMessage, DeliveryState, Role
from desktop.ui.chat.attachment_open import AttachmentActions
from desktop.ui.chat.changes_card import draw_changes
from desktop.ui.chat.model import MESSAGE_ROLE, REVISION_ROLE, MessageListModel
from desktop.ui.chat.render_cache import Change, Drawn, RenderCache
from desktop.ui.chat.reply_note import draw_reply_note
from desktop.ui.chat.text_selection import TextSelection
from desktop.ui.chat.version_switch import draw_version_switch
from desktop.ui.platform.resources import icon
from desktop.ui.render.attachments import paint_attachment
from desktop.ui.render.bubble_layout import (
    CORNER,
    BubbleLayout,
    bubble_fill,
    build_layout,
    estimate,
    metrics,
    stable_top,
)
from desktop.ui.render.delivery import bubble_error_text
from desktop.ui.render.document import draws_within, used_width
from desktop.ui.render.markdown import code_blocks
from desktop.ui.render.usage import footer_text
from desktop.ui.theme import LIGHT, Colors

_Index = QModelIndex | QPersistentModelIndex
LAYOUT_CACHE = 128
# Painted bubbles kept as pixmaps: this many screens' worth (the screen on view and the ones
# drawn ahead above and below, with room to scroll back), least recent dropped first; once the
# view rests, only those in its reach stay (ChatView._at_rest). Each screen is about 1.7 MB at
# the default window size: 4, not 6, keeps a long scroll under the memory target (see
# bench/scroll_memory.py).
PIXMAP_SCREENS = 4
PIXMAP_FLOOR = 4 * 2**20
# Finished block groups of streaming replies, drawn once each; a reply's groups must all fit.
BLOCK_PIXMAP_SCREENS = 4
# A finished bubble taller than this many screens is drawn in tiles of half a screen, each
# when it first shows: a long reply that just finished costs the tiles on screen, not all.
TILE_SCREENS = 0.5
TILE_MIN = 120
# Growing replies whose last drawn frame is kept for the next one to copy from.
LIVE_DRAWINGS = 4
# A reply that finished keeps the layout it streamed in until no reply streamed for this long
# (ms): then it is laid out whole, in idle time.
SETTLE_QUIET_MS = 400
# Rows at the end of a session estimated one by one when it opens (several screens' worth).
EXACT_ROWS = 200
# A code block a streaming reply closed is coloured once no frame was built for this long:
# colouring it (pygments) and laying the coloured block out again take ~10 ms, which on a
# reply still streaming would hold up the next deltas; a stream that never pauses gets its
# colours when the reply ends (laid out whole) or when it pauses.
COLOUR_QUIET_MS = 120
# ... but not longer than this after it closed: with real token pacing (a delta every 10-30 ms)
# a stream may never pause, and its code would stay plain until the reply ends.
COLOUR_LONGEST_WAIT_MS = 2000
# Colouring goes in slices of about this long (s), each after the events waiting: lexing a
# screen of code takes ~10 ms, which in one go would hold up a reply streaming meanwhile.
COLOUR_SLICE = 0.0005


def _rect_key(rect: QRect) -> tuple[int, int, int, int]:
    return rect.x(), rect.y(), rect.width(), rect.height()


def _chrome(msg: ChatMessage, lay: BubbleLayout) -> tuple[object, ...]:
    """What a bubble shows above its text (thinking and tool cards), as compared per frame;
    the thinking header says "Thinking…" while the reply streams."""
    thinking = (
        msg.thinking if lay.thinking_doc is not None else bool(msg.thinking),
        msg.streaming and bool(msg.thinking),
    )
    tools = tuple(
        (t.name, t.done, t.error, (t.args, t.output) if card[1] is not None else None)
        for t, card in zip(msg.tools, lay.tool_cards, strict=False)
    )
    return thinking, tools


class BubbleDelegate(QStyledItemDelegate):
    """Paints one ChatMessage per row; heights are exact once a row has been painted.

    Rows never painted report a cheap estimate, so opening 10,000 messages lays out only the
    rows on screen. Layouts and painted bubbles (pixmaps) are cached, in the view's
    `RenderCache`, per (message, revision, width): a repaint of rows that did not change only
    copies pixmaps, so a streaming reply costs one bubble's drawing per frame however many rows
    are on screen.

    Signals:
        action_requested(str, str): ("retry" | "edit" | "discard", message id).
        link_activated(str): a link was clicked (released over the same link).
        code_copied(str): a code block's text was copied to the clipboard.
    """

    action_requested = Signal(str, str)
    link_activated = Signal(str)
    code_copied = Signal(str)
    version_step = Signal(str, int)  # message id, -1 (previous) or +1 (next version)

    def __init__(self, view: QListView, model: MessageListModel, cache: RenderCache) -> None:
        super().__init__(view)
        self._view = view
        self._model = model
        self._width_now = 0
        self.colors: Colors = LIGHT
        # Layouts, heights, pictures and documents: the view's, dropped only by its invalidate.
        self._cache = cache
        self.rows_kept = 0
        self.blocks_drawn = 0
        self._expanded: dict[str, set[tuple[str, int]]] = {}
        self._pressed_link = ""
        # The view's text selection (painted over its one bubble) and keyboard-current row.
        self.selection: TextSelection | None = None
        # A selection over several messages: each one's selected part, by message id.
        self.span: dict[str, TextSelection] = {}
        self.focus_row = -1
        # The chat's link is not online: what a reply still streaming says meanwhile
        # (bubble_layout.waiting_text; "" while online; see ChatView.set_link_status).
        self.link_note = ""
        # Find in chat: the term (casefolded) highlighted in every bubble, and the current match.
        self.find_term = ""
        self.match_row = -1
        # Which occurrence of the find term in the match row is the current match.
        self.match_nth = -1
        self._resized: set[QPersistentModelIndex] = set()
        self.layouts_built = 0
        self.bubbles_drawn = 0
        self.painted_rows: set[int] = set()
        self.paints = 0
        # Lays out whole the finished replies still laid out as they streamed, once no reply
        # has streamed for SETTLE_QUIET_MS (every streaming frame starts the wait again).
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(SETTLE_QUIET_MS)
        self._settle.timeout.connect(self._settle_stacked)
        # Finished replies the settle step let go of their streamed layout: laid out whole.
        self._whole: set[str] = set()
        # Code blocks a streaming reply closed, shown plain: coloured one per idle step, once
        # the frames paused (COLOUR_QUIET_MS; every layout built starts the wait again).
        self._colour = QTimer(self)
        self._colour.setSingleShot(True)
        self._colour.timeout.connect(self._colour_code)
        self._colour_since: float | None = None  # when a closed block began to wait (s)
        # Lays out again in colours the groups replies showed plain (see _recolour_one); the
        # finished replies to mark for it.
        self._recoloured: list[str] = []
        self._recolour = QTimer(self)
        self._recolour.setSingleShot(True)
        self._recolour.timeout.connect(self._recolour_one)
        self._now = time.monotonic
        # Armed only when a painted row's real height differs from its estimate.
        self._resize_timer = QTimer(self)
        self._resize_timer.setSingleShot(True)
        self._resize_timer.setInterval(0)
        self._resize_timer.timeout.connect(self._on_resize_timer_timeout)

    def set_colors(self, colors: Colors) -> None:
        """Switch theme colours (the view invalidates its caches)."""
        self.colors = colors

    def forget_rows(self, message_ids: list[str]) -> None:
        """Rows let go (far from the screen): their heights, layouts and pictures go too."""
        for message_id in message_ids:
            self._expanded.pop(message_id, None)
        self._cache.invalidate(Change.ROWS, message_ids)

    def forget_expanded(self) -> None:
        """Collapse everything (a different session was opened)."""
        self._expanded.clear()

    def is_expanded(self, message_id: str, kind: str, index: int = 0) -> bool:
        """Whether a thinking section or tool card is expanded."""
        return (kind, index) in self._expanded.get(message_id, set())

    # -- geometry ---------------------------------------------------------------------------

    def _width(self) -> int:
        return max(200, self._width_now or self._view.viewport().width())

    def set_width(self, width: int) -> bool:
        """The viewport width changed (the view tells us, so sizeHint needs no widget calls)."""
        if width == self._width_now:
            return False
        self._width_now = width
        self._cache.invalidate(Change.WIDTH)
        return True

    def _font(self) -> QFont:
        return self._view.font()

    def layout_for(self, index: _Index) -> BubbleLayout:
        """The (cached) layout of a row at the current view width."""
        msg: ChatMessage = index.data(MESSAGE_ROLE)
        rev: int = index.data(REVISION_ROLE) or 0
        width = self._width()
        key = (msg.id, rev, width)
        lay = self._cache.layouts.get(key)
        if lay is not None:
            self._cache.layouts.move_to_end(key)
            return lay
        expanded = frozenset(self._expanded.get(msg.id, set()))
        # A reply that finishes keeps the layout it streamed in (its groups are laid out and
        # drawn already, and look as the whole does): laying it all out again as it ends
        # (milliseconds for a long reply) would hold up its last frame and the next reply's
        # first ones. It gets its own layout once nothing streamed for a while (_settle).
        stacked = (
            not msg.streaming
            and msg.id not in self._whole
            and self._cache.docs.streamed_here(msg.id)
        )
        lay = build_layout(
            msg,
            width,
            self._font(),
            self.colors,
            expanded,
            docs=self._cache.docs,
            stacked=stacked,
            waiting=self.link_note,
        )
        self._whole.discard(msg.id)
        if stacked:
            self._cache.stacked.add(msg.id)
        if msg.streaming or (stacked and not self._settle.isActive()):
            self._settle.start()
        if not self._cache.docs.colours_waiting():
            self._colour_since = None
            if not self._recolour.isActive() and msg.streaming:
                live = {msg.id}
                if any(i in live for i in self._cache.docs.showing_plain()):
                    self._recolour.start(0)  # (its colours came another way: a finished reply)
        else:
            now = self._now()
            if self._colour_since is None:
                self._colour_since = now
            if (now - self._colour_since) * 1000 < COLOUR_LONGEST_WAIT_MS:
                self._colour.start(COLOUR_QUIET_MS)
            else:  # waited long enough: coloured between this frame and the next
                self._colour.start(0)
        self.layouts_built += 1
        self._cache.layouts[key] = lay
        if len(self._cache.layouts) > LAYOUT_CACHE:
            self._cache.layouts.popitem(last=False)
        return lay

    def is_laid_out(self, index: _Index) -> bool:
        """Whether a row's layout at the current width is at hand (no layout to build)."""
        msg: ChatMessage | None = index.data(MESSAGE_ROLE)
        if msg is None:
            return False
        return (msg.id, index.data(REVISION_ROLE) or 0, self._width()) in self._cache.layouts

    def _colour_code(self) -> None:
        """Idle time: colour the code blocks shown plain, a slice at a time, then lay out again
        the replies that streamed here and the messages laid out before their code's lexer
        was loaded (each shows its colours on its next frame)."""
        docs = self._cache.docs
        if not docs.colours_waiting():
            return
        docs.colour_step(COLOUR_SLICE)
        if docs.colours_waiting():
            self._colour.start(0)  # the next slice, after the events waiting
        else:
            self._coloured()

    def _coloured(self) -> None:
        """Every block waiting has its colours: the replies and messages that showed them
        plain are laid out again, one per turn of the loop."""
        self._colour_since = None
        docs = self._cache.docs
        live = self._live()
        waiting = [i for i in docs.showing_plain() if i not in live]
        # (and those laid out provisionally, see MarkdownCache.provisional)
        self._recoloured = waiting + [i for i in docs.take_provisional() if i not in waiting]
        self._recolour.start(0)

    def finish_provisional(self) -> None:
        """What this view's provisional renders wanted (code's lexers, linkify's patterns),
        made ready at once, and those messages laid out again: start-up, once the window is
        painted, before a reply streams (a slice at a time in idle time could fall in its
        frames). Every render after it is final."""
        docs = self._cache.docs
        docs.markdown.renders_final()
        if not docs.colours_waiting() and not docs.has_provisional():
            return
        while docs.colours_waiting():
            docs.colour_step(1.0)
        self._colour.stop()
        self._coloured()

    def _live(self) -> set[str]:
        """The replies streaming now (they are the last rows)."""
        return {m.id for m in self._model.messages()[-LIVE_DRAWINGS:] if m.streaming}

    @property
    def colouring(self) -> bool:
        """Whether code shown plain waits for its colours (or a reply to be laid out in them)."""
        docs = self._cache.docs
        live = self._live()
        return (
            docs.colours_waiting()
            or self._recolour.isActive()
            or any(i in live for i in docs.showing_plain())
        )

    def _recolour_one(self) -> None:
        """Code shown plain gets the colours it has now, one reply per turn of the loop: a
        streaming reply's group is parsed again in one turn, laid out in the next (see
        `BubbleDocs.recolour_one`) and its bubble laid out with it in a third (its next frame
        only draws it); a finished reply is marked to be laid out again (when it shows).
        Each may be a screen of code (a few ms to lay out, a few to draw); all at once, or in
        the frame after, they held up the deltas of a reply streaming meanwhile."""
        message_id = self._cache.docs.recolour_one(self._live())
        if message_id is None and self._recoloured:
            message_id = self._recoloured.pop(0)
        if message_id is None:
            return
        if message_id and self._model.row_of(message_id) is not None:  # ("": not yet)
            self._model.touch(message_id)
        self._recolour.start(0)

    def _streaming_besides(self, message_id: str) -> bool:
        """Whether a reply other than `message_id` is streaming (they are the last rows)."""
        return any(
            m.streaming and m.id != message_id for m in self._model.messages()[-LIVE_DRAWINGS:]
        )

    def _settle_stacked(self) -> None:
        """Nothing streamed for a while: replies kept as they streamed are laid out whole."""
        if self._streaming_besides(""):
            return  # the next streaming frame starts the wait again
        ids, self._cache.stacked = self._cache.stacked, set()
        for message_id in ids:
            self._cache.live.pop(message_id, None)
            if self._model.row_of(message_id) is not None:
                self._whole.add(message_id)
                self._model.touch(message_id)

    def sizeHint(self, option: QStyleOptionViewItem, index: _Index) -> QSize:
        # Called for every row on each relayout (10,000 rows on opening a long session): dict
        # lookups and arithmetic only, no text layout and no font measuring.
        try:
            msg = self._model.message_at(index.row())
        except IndexError:
            return QSize(0, 0)
        width = self._width_now if self._width_now > 200 else self._width()
        exact = self._cache.exact.get(msg.id)
        if exact is not None and exact[1] == width:
            # Exact for this revision, or the last measured one (a growing reply): painting it
            # measures again and publishes a change only if the height really moved.
            return QSize(width, exact[2])
        guess = self._cache.estimates.get(msg.id)
        if guess is None:
            guess = self._estimate(msg, width)
        return QSize(width, guess)

    def row_heights(self) -> list[int]:
        """Every row's height for the view's tree, in one pass (opening or resizing).

        Rows measured at this width keep their height. The last EXACT_ROWS rows (where the
        view opens) get their own estimate; older rows get their role's mean over those, so
        opening 10,000 messages costs no per-row arithmetic: each older row is estimated
        properly, then measured, when it first comes near the screen.
        """
        width = self._width_now if self._width_now > 200 else self._width()
        if self._cache.metrics is None:
            self._cache.metrics = metrics(width, self._font())
        m = self._cache.metrics
        exact_of = self._cache.exact.get
        guesses = self._cache.estimates
        messages = self._model.messages()
        split = max(0, len(messages) - EXACT_ROWS)
        known = bool(self._cache.exact or guesses)
        tail: list[int] = []
        sums: dict[Role, list[int]] = {}
        for msg in messages[split:]:
            exact = exact_of(msg.id)
            if exact is not None and exact[1] == width:
                height = exact[2]
            else:
                guess = guesses.get(msg.id)
                if guess is None:
                    guess = guesses[msg.id] = round(estimate(msg, m))
                height = guess
            tail.append(height)
            total = sums.setdefault(msg.role, [0, 0])
            total[0] += height
            total[1] += 1
        if not split:
            return tail
        mean = {role: s // n for role, (s, n) in sums.items()}
        fallback = round(estimate(messages[0], m))
        head = [mean.get(msg.role, fallback) for msg in messages[:split]]
        if known:
            for i, msg in enumerate(messages[:split]):
                exact = exact_of(msg.id)
                if exact is not None and exact[1] == width:
                    head[i] = exact[2]
                elif msg.id in guesses:
                    head[i] = guesses[msg.id]
        head += tail
        return head

    def row_height(self, msg: ChatMessage) -> int:
        """One row's height as sizeHint reports it (exact once measured, else the estimate)."""
        width = self._width_now if self._width_now > 200 else self._width()
        exact = self._cache.exact.get(msg.id)
        if exact is not None and exact[1] == width:
            return exact[2]
        guess = self._cache.estimates.get(msg.id)
        return guess if guess is not None else self._estimate(msg, width)

    def measure(self, index: _Index) -> int:
        """A row's real height at the current width (lays it out once; cached)."""
        msg: ChatMessage | None = index.data(MESSAGE_ROLE)
        if msg is None:
            return 0
        lay = self.layout_for(index)
        height = round(lay.height)
        self._cache.exact[msg.id] = (index.data(REVISION_ROLE) or 0, self._width(), height)
        return height

    def _estimate(self, msg: ChatMessage, width: int) -> int:
        if self._cache.metrics is None:
            self._cache.metrics = metrics(width, self._font())
        guess = round(estimate(msg, self._cache.metrics))
        self._cache.estimates[msg.id] = guess
        return guess

    # -- painting ---------------------------------------------------------------------------

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: _Index) -> None:
        msg: ChatMessage | None = index.data(MESSAGE_ROLE)
        if msg is None:
            return
        self.painted_rows.add(index.row())
        self.paints += 1
        rev: int = index.data(REVISION_ROLE) or 0
        lay = self.layout_for(index)
        self._note_height(index, msg, lay)
        area = self._bubble_area(lay)
        sel = self.span.get(msg.id) or self.selection
        if sel is not None and (sel.message_id != msg.id or sel.empty):
            sel = None
        found = bool(self.find_term) and self.find_term in msg.text.casefold()
        if sel is not None or found:
            # Bubbles with selected or found text are drawn directly, highlights and all.
            painter.save()
            painter.translate(option.rect.topLeft())
            painter.setFont(self._font())
            current = self.match_nth if index.row() == self.match_row else -1
            term = self.find_term if found else ""
            self._draw_bubble(painter, msg, lay, sel, find_term=term, current_match=current)
            painter.restore()
        else:
            shown = self._view.viewport().rect().translated(-option.rect.topLeft())
            if msg.streaming:
                # A growing reply is drawn anew every frame: only its part on screen (a long
                # reply's table or code block can be screens tall).
                parts = [area & shown]
            else:
                parts = [t for t in self._tiles(area) if t.intersects(shown)]
            for part in parts:
                if not part.isEmpty():
                    pix = self._pixmap(msg, rev, lay, part)
                    painter.drawPixmap(option.rect.topLeft() + part.topLeft(), pix)
        if index.row() in (self.focus_row, self.match_row):
            self._draw_focus(painter, lay.bubble.translated(QPointF(option.rect.topLeft())))

    def _pixmap(
        self, msg: ChatMessage, rev: int, lay: BubbleLayout, part: QRect | None = None
    ) -> QPixmap:
        """The painted bubble of a row (or its `part`), from the cache or drawn now."""
        area = self._bubble_area(lay)
        part = area if part is None else part
        key = (msg.id, rev, self._width(), *([] if part == area else _rect_key(part)))
        cached = self._cache.pixmaps.get(key)
        if cached is None:
            old = self._cache.live_keys.pop(msg.id, None)
            if old is not None and old in self._cache.pixmaps:
                self._cache.pixmap_bytes -= self._cache.pixmaps.pop(old)[1]
            if msg.streaming:
                last = self._cache.live.pop(msg.id, None)
                self._cache.live_keys[msg.id] = key
            else:
                # A reply that just finished, still laid out as it streamed: its tiles copy
                # what its last frame drew alike (all of it but the end, usually).
                last = self._cache.live.get(msg.id) if msg.id in self._cache.stacked else None
            cached = self._render_bubble(msg, lay, part, last)
            if msg.streaming:
                self._cache.live[msg.id] = Drawn(lay, part, _chrome(msg, lay), cached[0])
                while len(self._cache.live) > LIVE_DRAWINGS:
                    self._cache.live.pop(next(iter(self._cache.live)))
            self._cache.pixmaps[key] = cached
            self._cache.pixmap_bytes += cached[1]
            budget = self._budget(PIXMAP_SCREENS)
            while self._cache.pixmap_bytes > budget and len(self._cache.pixmaps) > 1:
                self._cache.pixmap_bytes -= self._cache.pixmaps.popitem(last=False)[1][1]
        else:
            self._cache.pixmaps.move_to_end(key)
        return cached[0]

    def _budget(self, screens: int) -> int:
        """Bytes of `screens` screens of the view at its pixel ratio."""
        size = self._view.viewport().size()
        dpr = self._view.devicePixelRatioF()
        return max(PIXMAP_FLOOR, round(screens * size.width() * size.height() * 4 * dpr * dpr))

    def is_prepared(self, index: _Index) -> bool:
        """Whether painting the row costs only a blit (its bubble is drawn and cached)."""
        msg: ChatMessage | None = index.data(MESSAGE_ROLE)
        if msg is None or msg.streaming:
            return True
        rev, width = index.data(REVISION_ROLE) or 0, self._width()
        if (msg.id, rev, width) in self._cache.pixmaps:
            return True
        area = self._bubble_area(self.layout_for(index))
        return all(
            (msg.id, rev, width, *_rect_key(t)) in self._cache.pixmaps for t in self._tiles(area)
        )

    def prepare(self, index: _Index, deadline: float | None = None) -> bool:
        """Lay out and draw a row now (idle time, before it scrolls into view); a tall one
        tile by tile until `deadline` (perf_counter). True when all of it is drawn."""
        msg: ChatMessage | None = index.data(MESSAGE_ROLE)
        if msg is None or msg.streaming:
            return True
        lay = self.layout_for(index)
        rev = index.data(REVISION_ROLE) or 0
        for tile in self._tiles(self._bubble_area(lay)):
            if deadline is not None and time.perf_counter() > deadline:
                return False
            self._pixmap(msg, rev, lay, tile)
        return True

    def _tiles(self, area: QRect) -> list[QRect]:
        """The parts a finished bubble is drawn in: itself, or tiles when it is tall."""
        step = max(TILE_MIN, round(self._view.viewport().height() * TILE_SCREENS))
        dpr = self._view.devicePixelRatioF()
        if area.height() <= 2 * step or dpr != int(dpr):
            return [area]  # (a fractional pixel ratio would show the seams)
        bottom = area.y() + area.height()
        return [
            QRect(area.x(), y, area.width(), min(step, bottom - y))
            for y in range(area.y(), bottom, step)
        ]

    @staticmethod
    def _bubble_area(lay: BubbleLayout) -> QRect:
        # The rounded outline's pen reaches half a pixel outside the bubble.
        return lay.bubble.adjusted(-1, -1, 1, 1).toAlignedRect()

    def _render_bubble(
        self, msg: ChatMessage, lay: BubbleLayout, part: QRect, last: Drawn | None = None
    ) -> tuple[QPixmap, int]:
        """Draw `part` of a bubble (row coordinates) into a transparent pixmap (hi-dpi aware);
        returns it with its bytes. `last`: the previous frame of a growing reply, whose rows
        that did not change are copied instead of drawn again."""
        dpr = self._view.devicePixelRatioF()
        pix = QPixmap(max(1, round(part.width() * dpr)), max(1, round(part.height() * dpr)))
        pix.setDevicePixelRatio(dpr)
        pix.fill(Qt.GlobalColor.transparent)
        kept = self._kept_rows(msg, lay, part, last, dpr)
        painter = QPainter(pix)
        try:
            painter.setFont(self._font())
            painter.translate(-part.topLeft())
            if kept is not None and last is not None:
                # The unchanged rows as they were, then the rows above and below them.
                painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_Source)
                source = kept.translated(-last.part.topLeft())
                painter.drawPixmap(
                    kept,
                    last.pixmap,
                    QRect(
                        round(source.x() * dpr),
                        round(source.y() * dpr),
                        round(source.width() * dpr),
                        round(source.height() * dpr),
                    ),
                )
                painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceOver)
                self.rows_kept += kept.height()
                above = QRect(part.left(), part.top(), part.width(), kept.top() - part.top())
                below = QRect(part.left(), kept.bottom() + 1, part.width(), 0)
                below.setBottom(part.bottom())
                for band in (above, below):
                    if band.height() > 0:
                        painter.setClipRect(band)  # a document lays out what its clip touches
                        self._draw_bubble(painter, msg, lay, banded=True)
            else:
                if part != self._bubble_area(lay):
                    painter.setClipRect(part)  # documents lay out and draw only what shows
                self._draw_bubble(painter, msg, lay)
        finally:
            painter.end()
        self.bubbles_drawn += 1
        return pix, pix.width() * pix.height() * 4

    def _kept_rows(
        self, msg: ChatMessage, lay: BubbleLayout, part: QRect, last: Drawn | None, dpr: float
    ) -> QRect | None:
        """The rows of `part` (row coordinates) that the last frame drew exactly as this one
        would, or None. Whole device pixels only: a fractional pixel ratio draws anew."""
        if (
            last is None
            or dpr != int(dpr)
            or last.pixmap.devicePixelRatio() != dpr
            or last.chrome != _chrome(msg, lay)
        ):
            return None
        # Not the top corners: their antialiased edge comes out a shade different when the
        # bubble's height changes (its sides do not; stable_top stops above the bottom ones).
        bubble = lay.bubble
        top = math.ceil(bubble.top() + CORNER)
        bottom = math.floor(stable_top(last.layout, lay))  # (QRect's & would flip a negative one)
        if bottom <= top:
            return None
        inside = QRect(part.left(), top, part.width(), bottom - top)
        kept = part.intersected(last.part).intersected(inside)
        if kept.isEmpty() or kept.width() != part.width():
            return None  # (whole rows only: a document's clip must span its width)
        return kept

    def _draw_focus(self, painter: QPainter, bubble: QRectF) -> None:
        """The keyboard focus ring around the current message (drawn live, never cached)."""
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(QColor(self.colors.accent), 2))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRoundedRect(bubble.adjusted(-2, -2, 2, 2), 15, 15)
        painter.restore()

    def _draw_bubble(
        self,
        painter: QPainter,
        msg: ChatMessage,
        lay: BubbleLayout,
        selection: TextSelection | None = None,
        *,
        find_term: str = "",
        current_match: int = -1,
        banded: bool = False,
    ) -> None:
        """Paint a bubble with the row's top-left at the painter's origin (`banded`: the part
        of a growing reply's frame that changed, the rest copied from its last frame)."""
        c = self.colors
        user = msg.role is Role.USER
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        path = QPainterPath()
        path.addRoundedRect(lay.bubble, 14, 14)
        bg = QColor(bubble_fill(msg.role, c))
        painter.fillPath(path, bg)
        if msg.role not in (Role.USER, Role.SYSTEM):
            painter.setPen(QColor(c.card_border))
            painter.drawPath(path)
        fg = QColor(c.user_text if user else c.assistant_text)
        muted = QColor(fg)
        muted.setAlphaF(0.68)
        font = self._font()
        if lay.thinking_header is not None:
            open_ = self.is_expanded(msg.id, "thinking")
            painter.setPen(muted)
            label = ("▾ " if open_ else "▸ ") + ("Thinking…" if msg.streaming else "Thinking")
            painter.drawText(lay.thinking_header, Qt.AlignmentFlag.AlignVCenter, label)
            if lay.thinking_doc is not None:
                self._draw_doc(painter, lay.thinking_doc, lay.thinking_pos, muted)
        for i, (header, body, pos) in enumerate(lay.tool_cards):
            self._draw_tool(painter, msg, i, (header, body, pos))
        if lay.changes is not None:
            draw_changes(painter, lay.changes, c)
        if lay.doc is not None or lay.tail_doc is not None:
            clip = painter.clipBoundingRect() if painter.hasClipping() else None
            seen = 0  # occurrences of the find term in the documents above
            for i, (doc, at) in enumerate(lay.text_docs()):
                marks = self._found(doc, find_term, current_match - seen) if find_term else []
                seen += len(marks)
                if clip is not None and (
                    clip.bottom() <= at.y() or clip.top() >= at.y() + doc.size().height()
                ):
                    # Above or below what this frame draws (a band that starts where it ends
                    # holds none of it): not even laid out to draw.
                    continue
                cursor = selection.cursor_in(i, doc) if selection is not None else None
                if cursor is not None:
                    marks.append(self._highlight(cursor, user))
                if not marks and doc is not lay.doc and doc is not lay.tail_doc:
                    if clip is not None and self._draws_alike(doc, at, clip, banded):
                        # Only its last rows show in this part, and it was never drawn whole:
                        # those rows drawn now, not all of it into its pixmap.
                        self._draw_doc(painter, doc, at, fg)
                    else:
                        self._draw_finished_block(painter, doc, at, fg, bg)
                else:
                    self._draw_doc(painter, doc, at, fg, marks)
            for zone in lay.zones:
                if zone.kind == "copy":
                    r = zone.rect
                    bg = QColor(c.base)
                    bg.setAlphaF(0.85)
                    p2 = QPainterPath()
                    p2.addRoundedRect(r, 6, 6)
                    painter.fillPath(p2, bg)
                    icon("copy", self.colors.icon_tint).paint(
                        painter, r.adjusted(5, 5, -5, -5).toRect()
                    )
        painter.setPen(fg)
        on_accent = msg.role is Role.USER
        clip_icon = icon("attach", "#ffffff" if on_accent else self.colors.icon_tint)
        for att, r in zip(msg.attachments, lay.attachment_rects, strict=False):
            paint_attachment(
                painter,
                att,
                r,
                self.colors,
                preview=self._cache.docs.previews.get(att),
                on_accent=on_accent,
                attach_icon=clip_icon,
            )
        self._draw_footer(painter, msg, lay, font, muted)
        draw_version_switch(painter, msg, lay, c)
        if lay.error_rect is not None and not user:
            draw_reply_note(painter, msg, lay, c)
        elif lay.error_rect is not None:
            err = QFontMetricsF(painter.font()).elidedText(
                bubble_error_text(msg), Qt.TextElideMode.ElideRight, lay.error_rect.width()
            )
            painter.setPen(fg)
            painter.drawText(lay.error_rect, Qt.AlignmentFlag.AlignVCenter, err)
        for zone in lay.zones:
            if zone.kind in ("retry", "edit", "discard"):
                p3 = QPainterPath()
                p3.addRoundedRect(zone.rect, 8, 8)
                painter.fillPath(p3, QColor(255, 255, 255, 60 if user else 0))
                painter.setPen(fg)
                painter.drawPath(p3)
                painter.drawText(zone.rect, Qt.AlignmentFlag.AlignCenter, zone.label)
        painter.restore()

    def _highlight(self, cursor: QTextCursor, user: bool) -> QAbstractTextDocumentLayout.Selection:
        """Selected text: inverted on the coloured user bubble, accent-on-white elsewhere."""
        mark = QAbstractTextDocumentLayout.Selection()
        mark.cursor = cursor
        fmt = QTextCharFormat()
        if user:
            fmt.setBackground(QColor("#ffffff"))
            fmt.setForeground(QColor(self.colors.user_bubble))
        else:
            fmt.setBackground(QColor(self.colors.accent))
            fmt.setForeground(QColor("#ffffff"))
        mark.format = fmt
        return mark

    @staticmethod
    def _found(
        doc: QTextDocument, term: str, current: int
    ) -> list[QAbstractTextDocumentLayout.Selection]:
        """Every occurrence of a find term in a document, marked like a highlighter pen; the
        `current`-th (0-based, -1: none) in orange, the current match."""
        marks: list[QAbstractTextDocumentLayout.Selection] = []
        fmt = QTextCharFormat()
        fmt.setBackground(QColor("#ffe066"))
        fmt.setForeground(QColor("#1c2330"))
        now = QTextCharFormat(fmt)
        now.setBackground(QColor("#ff9632"))
        cursor = doc.find(term, 0)
        while not cursor.isNull() and len(marks) < 500:
            mark = QAbstractTextDocumentLayout.Selection()
            mark.cursor = cursor
            mark.format = now if len(marks) == current else fmt
            marks.append(mark)
            cursor = doc.find(term, cursor)
        return marks

    def _draw_doc(
        self,
        painter: QPainter,
        doc: QTextDocument,
        pos: QPointF,
        fg: QColor,
        marks: list[QAbstractTextDocumentLayout.Selection] | None = None,
    ) -> None:
        painter.save()
        painter.translate(pos)
        ctx = QAbstractTextDocumentLayout.PaintContext()
        ctx.palette.setColor(QPalette.ColorRole.Text, fg)
        if painter.hasClipping():
            ctx.clip = painter.clipBoundingRect()  # a long document: lay out only what shows
        if marks:
            ctx.selections = marks
        doc.documentLayout().draw(painter, ctx)
        painter.restore()

    def _draws_alike(self, doc: QTextDocument, at: QPointF, clip: QRectF, banded: bool) -> bool:
        """Whether a finished group not drawn into its pixmap yet may be drawn directly under
        `clip`, its pixels then the same as copied from that pixmap: it sits on whole pixels,
        draws nothing past its width (no rule) and `clip` leaves part of it out, or is the part
        of a frame that changed (`banded`: the frames after copy it; a picture of it all would
        cost drawing it all, ~1 ms for a paragraph, in that frame)."""
        dpr = self._view.devicePixelRatioF()
        return (
            id(doc) not in self._cache.block_pixmaps
            and (banded or clip.top() > at.y() or clip.bottom() < at.y() + doc.size().height())
            and dpr == int(dpr)
            and at.x() == int(at.x())
            and at.y() == int(at.y())
            and draws_within(doc)
        )

    def _draw_finished_block(
        self, painter: QPainter, doc: QTextDocument, pos: QPointF, fg: QColor, bg: QColor
    ) -> None:
        """One finished block group of a streaming reply: drawn once into a pixmap, then copied.

        The pixmap is filled with the bubble's colour `bg` first (the group lies inside the
        bubble's fill), so its pixels are those of the group drawn straight onto the bubble:
        on a transparent pixmap, smooth shapes drawn over each other (a strikethrough across
        a letter, an underline through a descender) would blend a shade differently.
        """
        key = id(doc)
        colors = (fg.rgba(), bg.rgba())
        cached = self._cache.block_pixmaps.get(key)
        dpr = self._view.devicePixelRatioF()
        if (
            cached is None
            or cached[0] is not doc
            or cached[1] != colors
            or (cached[2].devicePixelRatio() != dpr)
        ):
            if cached is not None:
                self._cache.block_bytes -= self._pixmap_size(cached[2])
            # As wide as its text: a group is laid out as wide as the bubble may grow.
            width, height = math.ceil(used_width(doc)), doc.size().height()
            pix = QPixmap(max(1, round(width * dpr)), max(1, round(height * dpr)))
            pix.setDevicePixelRatio(dpr)
            pix.fill(bg)
            p = QPainter(pix)
            try:
                p.setRenderHint(QPainter.RenderHint.Antialiasing)
                self._draw_doc(p, doc, QPointF(), fg)
            finally:
                p.end()
            self.blocks_drawn += 1
            cached = (doc, colors, pix)
            self._cache.block_pixmaps[key] = cached
            self._cache.block_bytes += self._pixmap_size(pix)
            budget = self._budget(BLOCK_PIXMAP_SCREENS)
            while self._cache.block_bytes > budget and len(self._cache.block_pixmaps) > 1:
                self._cache.block_bytes -= self._pixmap_size(
                    self._cache.block_pixmaps.popitem(last=False)[1][2]
                )
        else:
            self._cache.block_pixmaps.move_to_end(key)
        painter.drawPixmap(pos, cached[2])

    @staticmethod
    def _pixmap_size(pix: QPixmap) -> int:
        return pix.width() * pix.height() * 4

    def _draw_tool(
        self,
        painter: QPainter,
        msg: ChatMessage,
        i: int,
        card_parts: tuple[QRectF, QTextDocument | None, QPointF],
    ) -> None:
        header, body, pos = card_parts
        c = self.colors
        tool = msg.tools[i]
        card = QRectF(header)
        if body is not None:
            card.setHeight(header.height() + body.size().height() + 12)
        path = QPainterPath()
        path.addRoundedRect(card, 9, 9)
        painter.fillPath(path, QColor(c.card))
        painter.setPen(QColor(c.card_border))
        painter.drawPath(path)
        icon("tool", self.colors.icon_tint).paint(
            painter, QRectF(header.left() + 8, header.top() + 7, 16, 16).toRect()
        )
        state = "failed" if tool.error else ("done" if tool.done else "running…")
        painter.setPen(QColor(c.text))
        text_rect = header.adjusted(30, 0, -28, 0)
        painter.drawText(text_rect, Qt.AlignmentFlag.AlignVCenter, tool.name)
        painter.setPen(QColor(c.danger) if tool.error else QColor(c.muted))
        painter.drawText(
            text_rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, state
        )
        chevron = "chevron-down" if body is not None else "chevron-right"
        icon(chevron, self.colors.icon_tint).paint(
            painter, QRectF(header.right() - 24, header.top() + 7, 16, 16).toRect()
        )
        if body is not None:
            self._draw_doc(painter, body, pos, QColor(c.text))

    def _draw_footer(
        self, painter: QPainter, msg: ChatMessage, lay: BubbleLayout, font: QFont, muted: QColor
    ) -> None:
        small = QFont(font)
        small.setPointSizeF(max(7.0, font.pointSizeF() - 2))
        painter.setFont(small)
        painter.setPen(muted)
        stamp = lay.stamp if lay.stamp is not None else footer_text(msg)
        rect = lay.footer
        if msg.delivery is not None:
            mark = QRectF(rect.right() - 14, rect.top() + 1, 14, 14)
            self._draw_delivery(painter, msg.delivery, mark, muted)
            rect = rect.adjusted(0, 0, -18, 0)
        painter.drawText(rect, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, stamp)
        painter.setFont(font)

    def _draw_delivery(
        self, painter: QPainter, state: DeliveryState, r: QRectF, color: QColor
    ) -> None:
        # Drawn, not an icon: the marks must stay legible on a coloured bubble in both themes.
        painter.save()
        pen = QPen(color, 1.6)
        pen.setCapStyle(Qt.PenCapStyle.RoundCap)
        pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
        painter.setPen(pen)
        c = r.center()
        if state is DeliveryState.PENDING:
            painter.drawEllipse(c, 5.5, 5.5)
            painter.drawPolyline([QPointF(c.x(), c.y() - 3), c, QPointF(c.x() + 2.5, c.y() + 1.5)])
        elif state is DeliveryState.CONFIRMED:
            painter.drawPolyline(
                [
                    QPointF(r.left() + 2, c.y()),
                    QPointF(c.x() - 1, r.bottom() - 3),
                    QPointF(r.right() - 1, r.top() + 3),
                ]
            )
        elif state is DeliveryState.UNCONFIRMED:
            f = painter.font()
            f.setBold(True)
            painter.setFont(f)
            painter.drawText(r, Qt.AlignmentFlag.AlignCenter, "?")
        else:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(self.colors.danger))
            painter.drawEllipse(c, 6.5, 6.5)
            painter.setPen(QPen(QColor("#ffffff"), 1.8))
            painter.drawLine(QPointF(c.x(), c.y() - 3.5), QPointF(c.x(), c.y() + 0.8))
            painter.drawPoint(QPointF(c.x(), c.y() + 3.2))
        painter.restore()

    def _note_height(self, index: _Index, msg: ChatMessage, lay: BubbleLayout) -> None:
        rev: int = index.data(REVISION_ROLE) or 0
        width = self._width()
        height = round(lay.height)
        old = self._cache.exact.get(msg.id)
        self._cache.exact[msg.id] = (rev, width, height)
        if old is None or old[2] != height or old[0] != rev or old[1] != width:
            reported: int | None = old[2] if old is not None and old[1] == width else None
            if reported is None:
                reported = self._cache.estimates.get(msg.id)
            if reported is None:
                reported = self._estimate(msg, width)
            if reported != height:
                self._resized.add(QPersistentModelIndex(index))
                if not self._resize_timer.isActive():
                    self._resize_timer.start()

    def _on_resize_timer_timeout(self) -> None:
        resized, self._resized = self._resized, set()
        # Each emission queues a full doItemsLayout() in the view: one per batch is enough.
        valid = [p for p in resized if p.isValid()]
        if valid:
            self.sizeHintChanged.emit(self._model.index(valid[0].row()))

    # -- interaction ------------------------------------------------------------------------

    def editorEvent(
        self, event: QEvent, model: Any, option: QStyleOptionViewItem, index: _Index
    ) -> bool:
        if event.type() not in (QEvent.Type.MouseButtonPress, QEvent.Type.MouseButtonRelease):
            return False
        assert isinstance(event, QMouseEvent)
        if event.button() != Qt.MouseButton.LeftButton:
            return False
        msg: ChatMessage = index.data(MESSAGE_ROLE)
        lay = self.layout_for(index)
        pos = event.position() - QPointF(option.rect.topLeft())
        link = self._link_at(lay, pos)
        if event.type() == QEvent.Type.MouseButtonPress:
            self._pressed_link = link
            return bool(link) or any(z.rect.contains(pos) for z in lay.zones)
        pressed, self._pressed_link = self._pressed_link, ""
        if link:
            if link == pressed:
                self.link_activated.emit(link)
            return True
        for zone in lay.zones:
            if zone.rect.contains(pos):
                self._activate(model, msg, zone.kind, zone.index)
                return True
        return False

    def _link_at(self, lay: BubbleLayout, pos: QPointF) -> str:
        for doc, at in lay.text_docs():
            # Each block group answers in its own coordinates.
            href = str(doc.documentLayout().anchorAt(pos - at))
            if href:
                return href
        return ""

    def _activate(self, model: Any, msg: ChatMessage, kind: str, index: int) -> None:
        if kind == "copy":
            blocks = code_blocks(msg.text)
            if index < len(blocks):
                QGuiApplication.clipboard().setText(blocks[index])
                self.code_copied.emit(blocks[index])
        elif kind in ("attachment", "save_attachment"):
            if index < len(msg.attachments):
                att = msg.attachments[index]
                if kind == "attachment":
                    AttachmentActions.open(
                        self._view, att, missing=self._cache.docs.previews.get(att).missing
                    )
                else:
                    AttachmentActions.save_as(self._view, att)
        elif kind == "version":
            self.version_step.emit(msg.id, index)
        elif kind in ("thinking", "tool", "changes", "change_file"):
            state = self._expanded.setdefault(msg.id, set())
            state.symmetric_difference_update({(kind, index)})
            model.touch(msg.id)
        else:
            self.action_requested.emit(kind, msg.id)

    def activate(self, msg: ChatMessage, kind: str, index: int) -> None:
        """Press one of a bubble's buttons (from the keyboard, through the message menu)."""
        self._activate(self._model, msg, kind, index)

    def on_zone_or_link(self, lay: BubbleLayout, pos: QPointF) -> bool:
        """Whether a row-relative point is over a button or a link (a click, not a selection)."""
        return bool(self._link_at(lay, pos)) or any(z.rect.contains(pos) for z in lay.zones)

    def zone_center(self, index: _Index, kind: str, n: int = 0) -> QPointF | None:
        """Where to click (row-relative) to hit a zone; for keyboard helpers and tests."""
        for zone in self.layout_for(index).zones:
            if zone.kind == kind and zone.index == n:
                return zone.rect.center()
        return None
