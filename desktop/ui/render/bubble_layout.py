"""Geometry of one chat bubble: documents, cards, buttons and their hit zones (no painting)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import NamedTuple

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QTextDocument

from desktop.core.chats.reply_state import state_text, unfinished
from desktop.core.models import ChatMessage, ConnectionState, DeliveryState, Role
from desktop.ui.render.attachments import GAP as ATTACH_GAP
from desktop.ui.render.attachments import Previews, attachment_size, estimated_height
from desktop.ui.render.changes import RESTORE_LABEL, ChangesCard, lay_out_changes
from desktop.ui.render.delivery import bubble_error_text, has_note
from desktop.ui.render.document import (
    SafeDocument,
    code_block_rects,
    code_unchanged_above,
    group_gap,
    has_table,
    is_paragraph,
    only_code,
    only_table,
    paragraph_unchanged_above,
    table_unchanged_above,
    unchanged_above,
    used_width,
)
from desktop.ui.render.markdown import (
    TABLE_CLASS,
    ChunkScan,
    MarkdownCache,
    closed_code,
    closed_fences,
    ends_in_open_fence,
    open_code,
    table_lines,
)
from desktop.ui.render.usage import footer_text
from desktop.ui.theme import Colors

ROW_MARGIN_V = 4.0
ROW_MARGIN_H = 16.0
PAD_H = 13.0
PAD_V = 9.0
MAX_BUBBLE = 720.0
BUBBLE_SHARE = 0.78  # of the width inside the row margins, at most, a bubble takes
SECTION_GAP = 6.0
HEADER_H = 24.0
CARD_H = 30.0
FOOTER_H = 16.0
BUTTON_H = 26.0
TOOL_BODY_LIMIT = 4000
# Replies still streaming: message id -> their finished block groups, each laid out once.
STREAMS = 8


@dataclass(slots=True)
class Zone:
    """A clickable area inside a bubble; `rect` is relative to the row's top-left."""

    kind: str  # copy | thinking | tool | retry | edit | discard | retry_reply | attachment
    index: int
    rect: QRectF
    label: str = ""


@dataclass(slots=True)
class BubbleLayout:
    """Everything needed to paint and hit-test one row at one width."""

    height: float
    bubble: QRectF
    doc: QTextDocument | None = None
    doc_pos: QPointF = field(default_factory=QPointF)
    # A streaming reply has no `doc`: `head_docs` are its finished block groups, stacked
    # (shared between revisions, so each is laid out and drawn once) and `tail_doc` is the
    # block still being written.
    head_docs: list[tuple[QTextDocument, QPointF]] = field(default_factory=list)
    tail_doc: QTextDocument | None = None
    tail_pos: QPointF = field(default_factory=QPointF)
    thinking_doc: QTextDocument | None = None
    thinking_pos: QPointF = field(default_factory=QPointF)
    thinking_header: QRectF | None = None
    tool_cards: list[tuple[QRectF, QTextDocument | None, QPointF]] = field(default_factory=list)
    attachment_rects: list[QRectF] = field(default_factory=list)
    footer: QRectF = field(default_factory=QRectF)
    # What the footer says (worked out once a layout, not again at every paint).
    stamp: str | None = None
    error_rect: QRectF | None = None
    # A reply streaming while its link is not online: what `error_rect` says (waiting_text).
    waiting: str = ""
    # A reply whose tools changed files: its "N files changed" card (ui/render/changes).
    changes: ChangesCard | None = None
    zones: list[Zone] = field(default_factory=list)

    def text_docs(self) -> list[tuple[QTextDocument, QPointF]]:
        """The documents holding the message text, top to bottom, with their positions."""
        parts = list(self.head_docs)
        for doc, pos in ((self.doc, self.doc_pos), (self.tail_doc, self.tail_pos)):
            if doc is not None:
                parts.append((doc, pos))
        return parts


def bubble_max_width(view_width: float) -> float:
    """Widest a bubble may be in a view this wide."""
    return max(160.0, min(MAX_BUBBLE, (view_width - 2 * ROW_MARGIN_H) * BUBBLE_SHARE))


@dataclass(frozen=True, slots=True)
class Metrics:
    """Font figures for `estimate`, measured once per font and width instead of once per row."""

    per_line: int
    line_spacing: float


def metrics(view_width: float, font: QFont) -> Metrics:
    """The figures `estimate` needs for a view this wide in this font."""
    fm = QFontMetricsF(font)
    content_w = bubble_max_width(view_width) - 2 * PAD_H
    per_line = max(10, int(content_w / max(1.0, fm.averageCharWidth())))
    return Metrics(per_line, fm.lineSpacing())


def estimate(msg: ChatMessage, m: Metrics) -> float:
    """A cheap height guess for rows never laid out: arithmetic only, no text layout."""
    # Wrapping counted over the whole text, not per line: no split, no loop per row.
    text = msg.text or " "
    lines = text.count("\n") + 1 + len(text) // m.per_line
    h = lines * m.line_spacing + 2 * PAD_V + FOOTER_H + SECTION_GAP
    if msg.thinking:
        h += HEADER_H + SECTION_GAP
    h += len(msg.tools) * (CARD_H + SECTION_GAP)
    if any(t.extra.get("changes") for t in msg.tools):
        h += CARD_H + 2 * SECTION_GAP  # the collapsed "N files changed" card
    h += sum(estimated_height(a, m.line_spacing) for a in msg.attachments)
    if msg.delivery is DeliveryState.FAILED:
        h += BUTTON_H + m.line_spacing + 2 * SECTION_GAP
    return h + 2 * ROW_MARGIN_V


def _plain_doc(
    text: str, font: QFont, width: float, color: str, mono: bool = False
) -> QTextDocument:
    doc = SafeDocument()
    doc.setDocumentMargin(0)
    f = QFont(font)
    if mono:
        f.setFamilies(["monospace"])
        f.setStyleHint(QFont.StyleHint.Monospace)
        f.setPointSizeF(max(7.0, font.pointSizeF() - 1))
    else:
        f.setItalic(True)
    doc.setDefaultFont(f)
    doc.setDefaultStyleSheet(f"body {{ color: {color}; }}")
    doc.setPlainText(text)
    doc.setTextWidth(width)
    return doc


def bubble_fill(role: Role, colors: Colors) -> str:
    """The colour a message's bubble is filled with."""
    if role is Role.SYSTEM:
        return colors.card
    return colors.user_bubble if role is Role.USER else colors.assistant_bubble


def _markdown_doc(
    role: Role, font: QFont, width: float, colors: Colors, rendered: str, *, fit: bool = True
) -> SafeDocument:
    return _laid_out(_parsed(role, font, colors, rendered), width, rendered, fit=fit)


def _parsed(role: Role, font: QFont, colors: Colors, rendered: str) -> SafeDocument:
    """A document of rendered markdown, not laid out yet (see _laid_out)."""
    doc = SafeDocument()
    doc.setDocumentMargin(0)
    doc.setDefaultFont(font)
    link = colors.user_link if role is Role.USER else colors.link
    cell = f"table.{TABLE_CLASS}"  # a markdown table's cells: the bubble's colour (its lines)
    doc.setDefaultStyleSheet(
        f"a {{ color: {link}; }} p {{ margin-top: 0px; margin-bottom: 6px; }}"
        " ul, ol { margin-top: 0px; margin-bottom: 6px; }"
        f" {cell} td, {cell} th {{ background-color: {bubble_fill(role, colors)}; }}"
    )
    doc.setHtml(rendered)
    doc.blank = not rendered.strip()
    return doc


def _laid_out(doc: SafeDocument, width: float, rendered: str, *, fit: bool) -> SafeDocument:
    """`_parsed`'s document laid out `width` wide (narrower to fit its text unless told not
    to: `fit`)."""
    doc.setTextWidth(width)
    doc.code_rects = code_block_rects(doc)  # the width changes below only without code
    if not doc.code_rects:
        ideal = doc.idealWidth()
        if ideal + 1 < width:
            if fit or "<hr" in rendered:
                doc.setTextWidth(ideal + 1)
            else:
                # Not laid out a second time (a growing table's block is redone every frame):
                # left-aligned text lays out the same at any width it fits in, and the bubble
                # still takes the text's width. A rule would reach across the wider document.
                doc.text_width = ideal + 1
    return doc


class _Tail(NamedTuple):
    """A streaming reply's block being written, as one frame laid it out."""

    text: str
    html: str
    doc: SafeDocument


@dataclass(slots=True)
class _Stream:
    """One streaming reply's finished block groups as laid out at one width and look."""

    width: float
    look: str
    font: QFont
    colors: Colors
    role: Role
    groups: list[tuple[str, QTextDocument, bool]] = field(default_factory=list)
    """(its text, its document, whether a code block in it is shown plain for now)"""
    chunks: ChunkScan = field(default_factory=ChunkScan)
    """Its text's block groups, scanned from the last final one on."""
    tail: _Tail | None = None
    """The block being written as last laid out."""
    recolouring: tuple[str, str, SafeDocument] | None = None
    """A group being laid out again in its colours: (its text, HTML, document parsed from
    it and not laid out yet), see `BubbleDocs.recolour_one`."""


class BubbleDocs:
    """One view's documents: its rendered markdown, attachment thumbnails and, for the replies
    streaming in it (the STREAMS most recent), their finished block groups, each laid out once.

    Owned by the view's render cache (`desktop.ui.chat.render_cache.RenderCache`), never
    shared between views: a reply streaming in one view is laid out there alone.
    """

    __slots__ = ("_provisional", "_recoloured", "_streams", "markdown", "previews")

    def __init__(self, *, at_start: bool = False) -> None:
        self.markdown = MarkdownCache(at_start=at_start)
        self.previews = Previews()
        self._streams: OrderedDict[str, _Stream] = OrderedDict()
        # Messages laid out provisionally (`message_doc`, `MarkdownCache.provisional`).
        self._provisional: set[str] = set()
        # A streaming reply whose group was laid out in colours on the last `recolour_one`.
        self._recoloured: str | None = None

    def colour_step(self, budget: float) -> bool:
        """Colour code blocks a streaming reply showed plain for about `budget` seconds (idle
        time: pygments takes milliseconds a frame cannot spare), or make ready what another
        provisional render wanted (`MarkdownCache.warm_step`); whether one was finished.
        The replies streaming here and the provisional messages show it once laid out
        again."""
        return self.markdown.warm_step(budget)

    def colours_waiting(self) -> bool:
        """Whether a code block, or links, wait for `colour_step`."""
        return self.markdown.waiting()

    def has_provisional(self) -> bool:
        """Whether a message is laid out provisionally (see `take_provisional`)."""
        return bool(self._provisional)

    def take_provisional(self) -> list[str]:
        """The messages laid out provisionally (code shown plain for want of its lexer, bare
        links not linked yet: `MarkdownCache.provisional`), forgotten here: once `colour_step`
        has made ready what they wanted, each shows it when laid out again."""
        ids, self._provisional = sorted(self._provisional), set()
        return ids

    def streamed_here(self, message_id: str) -> bool:
        """Whether a reply's block groups from streaming are still kept (see `streaming_docs`)."""
        return message_id in self._streams

    def streaming(self) -> list[str]:
        """The replies whose block groups are kept, least recently laid out first."""
        return list(self._streams)

    def showing_plain(self) -> list[str]:
        """Those of `streaming` that show a code block plain (its colours came since or will),
        most recently laid out first."""
        return [
            message_id
            for message_id, stream in reversed(self._streams.items())
            if any(plain for _text, _doc, plain in stream.groups)
        ]

    def forget(self, message_ids: set[str] | None = None) -> None:
        """Drop the block groups of these replies, or of all, every markdown result and every
        thumbnail (None)."""
        if message_ids is None:
            self._streams.clear()
            self._provisional.clear()
            self.markdown.clear()
            self.previews.forget()
            return
        for message_id in message_ids:
            self._streams.pop(message_id, None)
            self._provisional.discard(message_id)

    def message_doc(
        self, msg: ChatMessage, font: QFont, width: float, colors: Colors
    ) -> QTextDocument:
        """The markdown document of a message's text, wrapped to at most `width`."""
        text = msg.text if msg.text or not msg.streaming else "…"
        style = (colors.pygments_style, colors.code_bg, colors.text)
        provisional = self.markdown.provisional
        if not msg.streaming and self._streams.pop(msg.id, None) is not None:
            # It just finished streaming here: its finished blocks' HTML is in the cache.
            html = self.markdown.render_finished(text, *style)
        else:
            html = self.markdown.render(text, *style)
        if self.markdown.provisional != provisional:
            self._provisional.add(msg.id)  # laid out again after `colour_step`
        else:
            self._provisional.discard(msg.id)
        return _markdown_doc(msg.role, font, width, colors, html)

    def _group_html(self, stream: _Stream, chunk: str, *, first: bool) -> tuple[str, bool]:
        """A finished block group's HTML, and whether a code block in it is shown plain."""
        colors = stream.colors
        style = (colors.pygments_style, colors.code_bg, colors.text)
        if "```" in chunk or "~~~" in chunk:
            # A code block closed in it is coloured in idle time (`colour_step`), not now.
            return self.markdown.streamed(chunk, *style, first=first)
        before = self.markdown.provisional
        html = self.markdown.render(chunk, *style)
        return html, self.markdown.provisional != before  # (see MarkdownCache.provisional)

    def _group(
        self,
        stream: _Stream,
        chunk: str,
        *,
        first: bool,
        parsed: tuple[str, SafeDocument] | None = None,
    ) -> tuple[str, QTextDocument, bool]:
        """A finished block group of a streaming reply, rendered and laid out (`first`: it
        just finished, its code shown plain; else shown with the colours its code has).
        `parsed`: HTML and its document parsed already (not laid out), used if it is the
        group's."""
        colors, font = stream.colors, stream.font
        html, plain = self._group_html(stream, chunk, first=first)
        last = stream.tail
        if first and last is not None and last.html == html:
            # The block being written finished as the last frame showed it (a table's last
            # row; a code block's last line, its code plain like its frames): that document,
            # laid out already, is the group. Its own flags as a block being written go.
            doc = last.doc
            doc.open_fence, doc.fences, doc.plain_code = False, 0, False
        elif parsed is not None and parsed[0] == html:
            doc = _laid_out(parsed[1], stream.width, html, fit=False)
        else:
            # Laid out once, like the block being written (see _markdown_doc's `fit`).
            doc = _markdown_doc(stream.role, font, stream.width, colors, html, fit=False)
        closed = closed_code(chunk) if "```" in chunk or "~~~" in chunk else None
        doc.code_block = closed is not None
        # A code block that closed, plain like its frames (see code_unchanged_above).
        doc.code_alone = (chunk[: chunk.index("\n") + 1], closed[1]) if closed and plain else None
        doc.table_lines = table_lines(chunk)  # a table alone, or None
        return chunk, doc, plain

    def recolour_one(self, live: set[str]) -> str | None:
        """Idle time: one group a reply still streaming (`live`) shows plain whose code has its
        colours now, rendered and laid out again in them over three calls, each a few ms for
        a screen of coloured code (in one turn of the loop they held up the deltas streaming
        meanwhile): this one parses its HTML and the next lays it out (each returns "": call
        again), the third returns the reply's id, for its bubble to be laid out again. None
        when none is left. Its next frame shows the group as it is, with no layout to make (a
        finished reply's are rendered again when it is laid out next, see `streaming_docs`).
        Nothing while a provisional render still waits for its colours or links: the group
        would come out the same."""
        if self._recoloured is not None:
            message_id, self._recoloured = self._recoloured, None
            return message_id
        if self.markdown.waiting():
            return None
        for message_id in [m for m in reversed(self._streams) if m in live]:
            stream = self._streams[message_id]
            for i, (chunk, _doc, plain) in enumerate(stream.groups):
                if not plain:
                    continue
                parsed = stream.recolouring
                stream.recolouring = None
                if parsed is None or parsed[0] != chunk:
                    html, _plain = self._group_html(stream, chunk, first=False)
                    doc = _parsed(stream.role, stream.font, stream.colors, html)
                    stream.recolouring = (chunk, html, doc)
                    return ""
                stream.groups[i] = self._group(stream, chunk, first=False, parsed=parsed[1:])
                self._recoloured = message_id
                return ""
        return None

    def streaming_docs(
        self, msg: ChatMessage, font: QFont, width: float, colors: Colors
    ) -> tuple[list[QTextDocument], QTextDocument]:
        """A growing reply as (its finished block groups; the block being written).

        A group is rendered and laid out when it is finished and then reused for every later
        delta, so a paragraph break costs one paragraph's layout however long the reply is.
        """
        style = (colors.pygments_style, colors.code_bg, colors.text)
        role = msg.role
        look = f"{font.key()}|{colors.link}|{colors.user_link}|{style}|{bubble_fill(role, colors)}"
        streams = self._streams
        stream = streams.get(msg.id)
        if stream is None or stream.width != width or stream.look != look:
            scan = stream.chunks if stream is not None else ChunkScan()
            stream = _Stream(width, look, QFont(font), colors, role, chunks=scan)
        chunks, tail = stream.chunks.scan(msg.text)
        streams[msg.id] = stream
        streams.move_to_end(msg.id)
        while len(streams) > STREAMS:
            streams.popitem(last=False)
        groups = stream.groups
        waiting = bool(self.markdown.colours.pending)
        for i, chunk in enumerate(chunks):
            if i < len(groups) and groups[i][0] == chunk:
                if not groups[i][2] or waiting or msg.streaming:
                    # (a streaming reply's gets its colours in idle time: `recolour_one`)
                    continue
                # Its code was shown plain and has been coloured since (a reply that finished,
                # laid out again when it shows): rendered again.
                groups[i] = self._group(stream, chunk, first=False)
                continue
            # The last group grew (a list went on) or the text was replaced: redo from here.
            del groups[i:]
            group = self._group(stream, chunk, first=True)
            if i < len(groups):
                groups[i] = group
            else:
                groups.append(group)
        del groups[len(chunks) :]
        last = stream.tail
        if last is not None and last.text == tail and not last.doc.plain_code:
            # The same block as the last frame's (a reply that ended as it showed, a tool card
            # that changed): that document, laid out already.
            return [doc for _, doc, _plain in groups], last.doc
        # The tail is rendered uncached: it changes with every delta.
        open_fence = ends_in_open_fence(tail)
        rendered, plain = self.markdown.streamed(
            tail or "…", *style, open_fence=open_fence, tail=True
        )
        tail_doc = _markdown_doc(role, font, width, colors, rendered, fit=False)
        tail_doc.code_alone = open_code(tail) if open_fence else None
        tail_doc.table_lines = None if open_fence else table_lines(tail)
        tail_doc.open_fence = open_fence
        tail_doc.fences = closed_fences(tail)
        tail_doc.plain_code = plain
        stream.tail = _Tail(tail, rendered, tail_doc)
        return [doc for _, doc, _plain in groups], tail_doc


def waiting_text(state: ConnectionState) -> str:
    """What a reply still streaming says under its text while its link is in `state` ("" while
    online): true to what the app does meanwhile (the header says the rest)."""
    if state is ConnectionState.ONLINE:
        return ""
    if state is ConnectionState.PAUSED:
        return "Paused: resume to get the rest of this reply"
    if state in (ConnectionState.CONNECTING, ConnectionState.RECONNECTING):
        return "Not connected: reconnecting to get the rest of this reply"
    return "Not connected: the rest of this reply comes once the connection is back"


def build_layout(
    msg: ChatMessage,
    view_width: float,
    font: QFont,
    colors: Colors,
    expanded: frozenset[tuple[str, int]],
    *,
    docs: BubbleDocs,
    stacked: bool = False,
    waiting: str = "",
) -> BubbleLayout:
    """Lay out one message for a view `view_width` wide, its text documents from the view's
    `docs`; `stacked`: a finished reply as it was laid out while it streamed (its block
    groups stacked, see `BubbleDocs.streaming_docs`); `waiting`: the link is not online, what
    a reply still streaming says under its text (`waiting_text`)."""
    fm = QFontMetricsF(font)
    max_w = bubble_max_width(view_width)
    inner_max = max_w - 2 * PAD_H
    user = msg.role is Role.USER
    lay = BubbleLayout(height=0.0, bubble=QRectF())
    content_w = 0.0
    y = ROW_MARGIN_V + PAD_V
    blocks: list[tuple[str, float]] = []  # deferred x placement: (kind, y)

    if msg.thinking:
        lay.thinking_header = QRectF(0, y, inner_max, HEADER_H)
        lay.zones.append(Zone("thinking", 0, lay.thinking_header))
        content_w = max(content_w, min(inner_max, fm.horizontalAdvance("▸ Thinking") + 24))
        y += HEADER_H
        if ("thinking", 0) in expanded:
            lay.thinking_doc = _plain_doc(msg.thinking, font, inner_max, colors.muted)
            blocks.append(("thinking", y))
            content_w = max(content_w, lay.thinking_doc.idealWidth())
            y += lay.thinking_doc.size().height()
        y += SECTION_GAP

    for i, tool in enumerate(msg.tools):
        header = QRectF(0, y, inner_max, CARD_H)
        body: QTextDocument | None = None
        y += CARD_H
        if ("tool", i) in expanded:
            text = f"{tool.args}\n\n{tool.output}".strip()[:TOOL_BODY_LIMIT] or "(no output)"
            body = _plain_doc(text, font, inner_max - 20, colors.text, mono=True)
            y += body.size().height() + 12
        lay.tool_cards.append((header, body, QPointF(10, header.bottom() + 6)))
        lay.zones.append(Zone("tool", i, header))
        content_w = inner_max
        y += SECTION_GAP

    ended = unfinished(msg)
    # A reply that failed before any word has only its state line: no empty text block.
    if msg.text or msg.streaming or not (msg.tools or msg.thinking or ended):
        if (msg.streaming or stacked) and msg.text:
            heads, lay.tail_doc = docs.streaming_docs(msg, font, inner_max, colors)
            parts = [*heads, lay.tail_doc]
        else:
            lay.doc = docs.message_doc(msg, font, inner_max, colors)
            parts = [lay.doc]
        lay.doc_pos = QPointF(0, y)
        copies = 0
        above: QTextDocument | None = None
        for part in parts:
            if isinstance(part, SafeDocument) and part.blank and part is not lay.tail_doc:
                continue  # blank lines before a block: no room in the whole text either
            if above is not None:
                y += group_gap(above, part)
            above = part
            if part is lay.tail_doc:
                lay.tail_pos = QPointF(0, y)
            elif part is not lay.doc:
                lay.head_docs.append((part, QPointF(0, y)))
            size = part.size()
            content_w = max(content_w, used_width(part))
            for r in code_block_rects(part):
                rect = QRectF(r.right() - 30, y + r.top() + 4, 26, 24)
                lay.zones.append(Zone("copy", copies, rect))
                copies += 1
            y += size.height()

    card = (
        None
        if user
        else lay_out_changes(msg, y + SECTION_GAP, inner_max, font, colors, expanded=expanded)
    )
    if card is not None:
        lay.changes = card
        y = card.card.bottom() + SECTION_GAP
        content_w = inner_max
        lay.zones.append(Zone("changes", 0, card.header, card.title))
        for i, row in enumerate(card.rows):
            lay.zones.append(Zone("change_file", i, row.rect, row.change.path))
        if card.button is not None:
            lay.zones.append(Zone("restore_changes", 0, card.button, RESTORE_LABEL))

    for i, att in enumerate(msg.attachments):
        # A thumbnail or a chip, each a button: it opens the file (see ui/chat/attachment_open).
        w, h = attachment_size(att, docs.previews.get(att), font, inner_max)
        rect = QRectF(0, y + ATTACH_GAP, w, h)
        lay.attachment_rects.append(rect)
        lay.zones.append(Zone("attachment", i, rect, att.filename))
        content_w = max(content_w, w)
        y += h + ATTACH_GAP

    if ended:
        # How the reply ended, in words (wrapped: a cause is a sentence), and its Retry.
        y += SECTION_GAP / 2
        note = fm.boundingRect(
            QRectF(0, 0, inner_max, 1e6), int(Qt.TextFlag.TextWordWrap), state_text(msg)
        )
        lay.error_rect = QRectF(0, y, inner_max, note.height())
        content_w = max(content_w, min(inner_max, note.width() + 2))
        y += note.height() + SECTION_GAP
        w = fm.horizontalAdvance("Retry") + 22
        lay.zones.append(Zone("retry_reply", 0, QRectF(0, y, w, BUTTON_H), "Retry"))
        content_w = max(content_w, w)
        y += BUTTON_H

    if waiting and msg.streaming and not user:
        # Said where the reader is, not only in the header: nothing more comes until then.
        y += SECTION_GAP / 2
        note = fm.boundingRect(QRectF(0, 0, inner_max, 1e6), int(Qt.TextFlag.TextWordWrap), waiting)
        lay.error_rect = QRectF(0, y, inner_max, note.height())
        lay.waiting = waiting
        content_w = max(content_w, min(inner_max, note.width() + 2))
        y += note.height()

    if msg.versions and not user:
        # < n/m >: the earlier replies to the same prompt (see ui/chat/version_switch).
        y += SECTION_GAP / 2
        step = BUTTON_H
        label_w = fm.horizontalAdvance(f"{len(msg.versions) + 1}/{len(msg.versions) + 1}") + 12
        lay.zones.append(Zone("version", -1, QRectF(0, y, step, step), "Previous version"))
        lay.zones.append(Zone("version", 1, QRectF(step + label_w, y, step, step), "Next version"))
        content_w = max(content_w, 2 * step + label_w)
        y += step

    small = QFont(font)
    small.setPointSizeF(max(7.0, font.pointSizeF() - 2))
    stamp = lay.stamp = footer_text(msg)
    footer_w = QFontMetricsF(small).horizontalAdvance(stamp + " ") + (18 if user else 0)
    content_w = max(content_w, footer_w)
    lay.footer = QRectF(0, y, 0, FOOTER_H)
    y += FOOTER_H

    if user and has_note(msg):
        y += SECTION_GAP / 2
        lay.error_rect = QRectF(0, y, inner_max, fm.lineSpacing())
        y += fm.lineSpacing()
        if msg.delivery is DeliveryState.FAILED:
            y += SECTION_GAP
            x = 0.0
            for kind, label in (("retry", "Retry"), ("edit", "Edit"), ("discard", "Discard")):
                w = fm.horizontalAdvance(label) + 22
                lay.zones.append(Zone(kind, 0, QRectF(x, y, w, BUTTON_H), label))
                x += w + 6
            content_w = max(content_w, x)
            y += BUTTON_H
        # Wide enough for the whole cause when it fits; the painter elides the rest.
        err_w = fm.horizontalAdvance(bubble_error_text(msg)) + 2
        content_w = max(content_w, min(inner_max, max(220.0, err_w)))

    content_w = min(inner_max, content_w)
    bubble_w = content_w + 2 * PAD_H
    bubble_h = y + PAD_V - ROW_MARGIN_V
    left = view_width - ROW_MARGIN_H - bubble_w if user else ROW_MARGIN_H
    lay.bubble = QRectF(left, ROW_MARGIN_V, bubble_w, bubble_h)
    lay.height = bubble_h + 2 * ROW_MARGIN_V
    # Everything above was placed at x=0 within the content box; shift into the bubble.
    dx = left + PAD_H
    lay.doc_pos += QPointF(dx, 0)
    lay.tail_pos += QPointF(dx, 0)
    lay.head_docs = [(doc, pos + QPointF(dx, 0)) for doc, pos in lay.head_docs]
    for kind, by in blocks:
        if kind == "thinking":
            lay.thinking_pos = QPointF(dx, by)
    if lay.thinking_header is not None:
        lay.thinking_header = lay.thinking_header.translated(dx, 0)
        lay.thinking_header.setWidth(content_w)
    lay.tool_cards = [
        (QRectF(dx, h.top(), content_w, h.height()), body, pos + QPointF(dx, 0))
        for h, body, pos in lay.tool_cards
    ]
    lay.attachment_rects = [r.translated(dx, 0) for r in lay.attachment_rects]
    lay.footer = QRectF(dx, lay.footer.top(), content_w, FOOTER_H)
    if lay.error_rect is not None:
        lay.error_rect = QRectF(dx, lay.error_rect.top(), content_w, lay.error_rect.height())
    if lay.changes is not None:
        lay.changes = lay.changes.shifted(dx, content_w)
    for zone in lay.zones:
        if zone.kind in ("thinking", "tool", "changes", "change_file"):
            zone.rect = QRectF(dx, zone.rect.top(), content_w, zone.rect.height())
        else:
            zone.rect = zone.rect.translated(dx, 0)
    return lay


# The bubble's rounded corners (and the outline's pen) reach this far up from its bottom.
CORNER = 15.0


def stable_top(old: BubbleLayout, new: BubbleLayout) -> float:
    """How far down (row coordinates) two layouts of one growing reply draw the same bubble.

    0 unless both are streaming layouts of a bubble in the same place and width with the same
    headers and cards above the text; then the shared finished groups (the same documents)
    and the part of the block being written that did not change (see `unchanged_above`),
    stopping above the bubble's bottom corners and any copy button that moved.
    """
    if (
        old.doc is not None
        or new.doc is not None
        or old.tail_doc is None
        or new.tail_doc is None
        or old.bubble.left() != new.bubble.left()
        or old.bubble.top() != new.bubble.top()
        or old.bubble.width() != new.bubble.width()
        or old.thinking_header != new.thinking_header
        or old.thinking_pos != new.thinking_pos
        or [(h, p) for h, _, p in old.tool_cards] != [(h, p) for h, _, p in new.tool_cards]
    ):
        return 0.0
    top = min(old.bubble.bottom(), new.bubble.bottom()) - CORNER
    shared = 0
    for (doc_a, at_a), (doc_b, at_b) in zip(old.head_docs, new.head_docs, strict=False):
        if doc_a is not doc_b or at_a != at_b:
            break
        shared += 1
    if shared == len(old.head_docs) == len(new.head_docs) and old.tail_pos == new.tail_pos:
        # Comparing costs about a third of drawing, block for block: it pays for a table's
        # rows (slow to draw), not for lines of text; a code block's are found from its code.
        # The same document (the same text, laid out once) is drawn alike all through.
        if old.tail_doc is new.tail_doc:
            same: float | None = new.tail_doc.size().height()
        else:
            same = code_unchanged_above(old.tail_doc, new.tail_doc)
        if same is None:
            same = table_unchanged_above(old.tail_doc, new.tail_doc)
        if same is None:
            same = paragraph_unchanged_above(old.tail_doc, new.tail_doc)
        if same is None:
            same = unchanged_above(old.tail_doc, new.tail_doc) if has_table(new.tail_doc) else 0.0
        top = min(top, new.tail_pos.y() + same)
    elif (
        shared == len(old.head_docs) == len(new.head_docs) - 1
        and new.head_docs[shared][1] == old.tail_pos
        and old.tail_pos == old.tail_pos.toPoint()
        and (
            only_code(new.head_docs[shared][0])
            or is_paragraph(new.head_docs[shared][0])
            or only_table(new.head_docs[shared][0])
        )
    ):
        # The block being written was finished (a table, its last rows with it; a code block,
        # its last lines and fence): it is a group now, laid out alike, whose rows above the
        # last ones did not change (a table or plain code alone, on whole pixels, is drawn the
        # same from its pixmap).
        group = new.head_docs[shared][0]
        same = code_unchanged_above(old.tail_doc, group)
        if same is None:
            same = table_unchanged_above(old.tail_doc, group)
        if same is None:
            same = paragraph_unchanged_above(old.tail_doc, group)
        if same is None:
            same = unchanged_above(old.tail_doc, group) if only_table(group) else 0.0
        top = min(top, old.tail_pos.y() + same)
    else:
        # A group finished (the block being written became one) or the text was replaced.
        firsts = [
            docs[shared][1].y() for docs in (old.head_docs, new.head_docs) if shared < len(docs)
        ]
        top = min(top, old.tail_pos.y(), new.tail_pos.y(), *firsts)
    copies_a = {(z.rect.y(), z.rect.x(), z.rect.height()) for z in old.zones if z.kind == "copy"}
    copies_b = {(z.rect.y(), z.rect.x(), z.rect.height()) for z in new.zones if z.kind == "copy"}
    for y, _x, _h in copies_a ^ copies_b:
        top = min(top, y)
    return max(0.0, top)
