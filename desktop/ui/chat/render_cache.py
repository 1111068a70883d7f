"""The chat view's render caches: one owner per view, one `invalidate` that clears them.

Everything a `ChatView` keeps so that it need not lay out, measure or draw again lives here:
row heights (exact and estimated, and the prefix sums the view scrolls by), bubble layouts,
painted bubbles and block groups (pixmaps), the documents of replies streaming in the view,
its rendered markdown and its attachment thumbnails (`BubbleDocs`). Nothing is kept at module
level, so two views never share a cached picture or a streaming reply's documents.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from PySide6.QtCore import QRect
from PySide6.QtGui import QPixmap, QTextDocument

from desktop.ui.chat.row_heights import RowHeights
from desktop.ui.render.bubble_layout import BubbleDocs, BubbleLayout, Metrics


class Change(Enum):
    """Why cached rendering went stale, which decides what `RenderCache.invalidate` drops."""

    LOOK = "look"
    """Theme or font: everything (no layout, picture or document may show the old look)."""
    SESSION = "session"
    """Another conversation is shown: everything but the rendered markdown and thumbnails,
    keyed by text and look or by content hash and so never stale (switching back re-renders
    and re-decodes nothing)."""
    WIDTH = "width"
    """The view's width: height estimates and font metrics (layouts and pictures are keyed
    by width, so they stay for the width they were made at)."""
    ROWS = "rows"
    """Rows let go (far from the screen): what is held for those messages."""


@dataclass(slots=True)
class Drawn:
    """A growing reply's last drawn frame: its layout, the part drawn and the pixmap."""

    layout: BubbleLayout
    part: QRect
    chrome: tuple[object, ...]
    pixmap: QPixmap


PixmapKey = tuple[object, ...]


class RenderCache:
    """One chat view's caches (see the module docstring); the view and its delegate read and
    fill the stores, and drop them only through `invalidate`."""

    def __init__(self, *, at_start: bool = False) -> None:
        self.docs = BubbleDocs(at_start=at_start)
        # Heights: the prefix sums the view scrolls by, re-read from `exact`/`estimates` when
        # `rows_stale` (a rebuild); id -> (revision, width, height) once measured; guesses.
        self.rows = RowHeights()
        self.rows_stale = False
        self.exact: dict[str, tuple[int, int, int]] = {}
        self.estimates: dict[str, int] = {}
        self.metrics: Metrics | None = None
        self.layouts: OrderedDict[tuple[str, int, int], BubbleLayout] = OrderedDict()
        # Painted bubbles (or tiles) by (id, revision, width[, tile]) -> (pixmap, bytes).
        self.pixmaps: OrderedDict[PixmapKey, tuple[QPixmap, int]] = OrderedDict()
        self.pixmap_bytes = 0
        # A growing reply's last drawn revision: replaced, not kept, when the next one is drawn.
        self.live_keys: dict[str, PixmapKey] = {}
        # ...and its last drawing, whose unchanged rows the next frame copies.
        self.live: dict[str, Drawn] = {}
        # Finished blocks of streaming replies, by document (held, so its id stays unique).
        self.block_pixmaps: OrderedDict[int, tuple[QTextDocument, tuple[int, int], QPixmap]] = (
            OrderedDict()
        )
        self.block_bytes = 0
        # Finished replies laid out as they streamed while another reply streams.
        self.stacked: set[str] = set()

    def invalidate(self, change: Change, message_ids: Iterable[str] = ()) -> None:
        """Drop what `change` made stale (`message_ids`: the rows of a `Change.ROWS`); the
        view re-reads its row heights on its next layout."""
        self.rows_stale = True
        if change is Change.WIDTH:
            self.estimates.clear()
            self.metrics = None
            return
        if change is Change.ROWS:
            self._forget(set(message_ids))
            return
        self.exact.clear()
        self.estimates.clear()
        self.metrics = None
        self.layouts.clear()
        self.pixmaps.clear()
        self.pixmap_bytes = 0
        self.live_keys.clear()
        self.live.clear()
        self.block_pixmaps.clear()
        self.block_bytes = 0
        self.stacked.clear()
        if change is Change.LOOK:
            self.docs.forget()
        else:
            self.docs.forget(set(self.docs.streaming()))

    def _forget(self, gone: set[str]) -> None:
        for message_id in gone:
            self.exact.pop(message_id, None)
            self.estimates.pop(message_id, None)
            self.live_keys.pop(message_id, None)
            self.live.pop(message_id, None)
        for key in [k for k in self.layouts if k[0] in gone]:
            del self.layouts[key]
        for drawn in [k for k in self.pixmaps if k[0] in gone]:
            self.pixmap_bytes -= self.pixmaps.pop(drawn)[1]
        self.docs.forget(gone)

    def keep_drawn(self, message_ids: set[str]) -> None:
        """Let go of the painted bubbles (and tiles) of every row but `message_ids`."""
        for drawn in [k for k in self.pixmaps if k[0] not in message_ids]:
            self.pixmap_bytes -= self.pixmaps.pop(drawn)[1]

    def held(self) -> int:
        """How many things are cached, all stores together (0 right after `Change.LOOK`)."""
        return (
            len(self.exact)
            + len(self.estimates)
            + (self.metrics is not None)
            + len(self.layouts)
            + len(self.pixmaps)
            + len(self.live_keys)
            + len(self.live)
            + len(self.block_pixmaps)
            + len(self.stacked)
            + len(self.docs.streaming())
            + len(self.docs.markdown)
            + len(self.docs.previews)
        )
