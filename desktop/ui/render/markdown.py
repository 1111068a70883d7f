"""Markdown to Qt-rich-text HTML: GFM-like (tables, strikethrough, task lists, autolinks), no raw
HTML, pygments code, no remote images.

The module functions cache nothing a chat wrote: a view's rendered text is cached by its own
`MarkdownCache` (owned by the view's `RenderCache`, cleared with it). Three `lru_cache`s stay
at module level because they hold no per-chat data, only objects built from a handful of fixed
names: `_lexer` (a pygments lexer per language name), `_formatter` (one per style name) and
`_parsers` (the two markdown-it parsers, with and without linkify).
"""

from __future__ import annotations

import html
import io
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from desktop.ui.platform.sources import forget_import_sources

# markdown-it's cap on the empty cells its table rule adds to rows shorter than the header
# (markdown_it.rules_block.table.MAX_AUTOCOMPLETED_CELLS; not imported: start-up stays lean).
MAX_AUTOCOMPLETED_CELLS = 0x10000

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r" {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")
# What a line still being written may grow into a list item from.
# A link reference definition ("[x]: url") changes how text before it renders.
_REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:", re.MULTILINE)
_LIST_START = re.compile(r"(?:[-+*]|\d{1,9}[.)]?)$")
# A GFM table's delimiter row: | --- | :-: | --: |
_TABLE_DELIMITER = re.compile(r"^\|?(?: *:?-+:? *\|)+ *:?-*:? *\r?\n?$")
_TBODY = "<tbody>\n"


@lru_cache(maxsize=1)
def _known_languages() -> frozenset[str]:
    """The language names of the lexers pygments ships (their aliases, lower case)."""
    from pygments.lexers import get_all_lexers  # type: ignore[import-untyped]

    return frozenset(
        a for _name, aliases, _files, _mimes in get_all_lexers(plugins=False) for a in aliases
    )


# Languages whose lexer and styles whose formatter are loaded (`colour_ready`).
_LEXERS_LOADED: set[str] = set()
_STYLES_LOADED: set[str] = set()


def colour_ready(lang: str, style: str) -> bool:
    """Whether colouring a block of `lang` in `style` now costs only its lexing: its lexer and
    the style's formatter are loaded. The first of each costs milliseconds on its own (~35 ms
    for the first block: pygments imported, its lexer's patterns compiled), which a block
    shown for the first time (a chat opened at start-up) pays in idle time instead, shown
    plain until then (`MarkdownCache`)."""
    if style not in _STYLES_LOADED:
        return False
    return lang in _LEXERS_LOADED or lang.lower() not in _known_languages()


@lru_cache(maxsize=64)
def _lexer(lang: str) -> Any:
    # pygments costs ~0.1 s to import: load it when the first code block renders, not at start-up.
    from pygments.lexers import get_lexer_by_name
    from pygments.lexers.special import TextLexer  # type: ignore[import-untyped]
    from pygments.util import ClassNotFound  # type: ignore[import-untyped]

    try:
        if lang.lower() not in _known_languages():
            # A name pygments does not ship a lexer for: plain text at once. Asked for it,
            # pygments would look for plugin lexers in every installed package's entry points
            # (~50 ms, on the UI thread, the first time), and the app offers no plugins.
            return TextLexer()
        lexer = get_lexer_by_name(lang)
        _LEXERS_LOADED.add(lang)
        return lexer
    except ClassNotFound:
        return TextLexer()
    finally:
        forget_import_sources()  # the lexer's modules were just imported


@lru_cache(maxsize=8)
def _formatter(style: str) -> Any:
    from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]

    formatter = HtmlFormatter(nowrap=True, noclasses=True, style=style)
    forget_import_sources()  # pygments and its style were just imported
    _STYLES_LOADED.add(style)
    return formatter


def highlighted(code: str, lang: str, style: str) -> str:
    """A code block's text as pygments-coloured HTML (uncached: see `MarkdownCache`)."""
    from pygments import highlight  # type: ignore[import-untyped]

    return str(highlight(code.rstrip("\n"), _lexer(lang), _formatter(style)))


class Highlighting:
    """`highlighted` done a slice at a time: lexing a block (pygments, in Python) is what costs,
    ~0.15 ms a line, so a block of a screen's height held the UI thread for ~10 ms at once.
    The lexer yields its tokens one by one; `step` takes them until its time is up, and
    formats them (a small part of the cost) once all are in. The HTML is `highlighted`'s."""

    __slots__ = ("_code", "_lang", "_style", "_taken", "_tokens", "html")

    def __init__(self, code: str, lang: str, style: str) -> None:
        self._code, self._lang, self._style = code, lang, style
        self._tokens: Iterator[Any] | None = None
        self._taken: list[Any] = []
        self.html: str | None = None
        """The coloured HTML once every token is in; None before."""

    def step(self, budget: float) -> bool:
        """Lex for about `budget` seconds (at least a few tokens); whether it is done."""
        if self.html is not None:
            return True
        if self._tokens is None:
            self._tokens = iter(_lexer(self._lang).get_tokens(self._code.rstrip("\n")))
        deadline = time.perf_counter() + budget
        take = self._taken.append
        for n, token in enumerate(self._tokens, 1):
            take(token)
            if n % 16 == 0 and time.perf_counter() > deadline:
                return False
        out = io.StringIO()
        _formatter(self._style).format(self._taken, out)
        self.html = out.getvalue()
        self._taken = []
        return True


Highlighter = Callable[[str, str, str], str]


# Code blocks are one-cell tables with this padding; markdown tables use TABLE_CELL_PADDING,
# which is how `document.code_block_rects` tells the two apart.
CODE_CELL_PADDING = 10
TABLE_CELL_PADDING = 5
TABLE_BORDER = "#9aa3b2"
# A markdown table's lines are its background showing one pixel wide between its cells, whose
# background is the bubble's (the class's rule in the document's style sheet: see
# `desktop.ui.render.bubble_layout`). Qt's border-collapse draws such lines at ~1.6x the
# layout's cost, and a table being written is laid out again at every frame.
TABLE_CLASS = "grid"


def _code_html(
    code: str, lang: str, style: str, bg: str, fg: str, *, highlight: Highlighter = highlighted
) -> str:
    body = highlight(code, lang, style) if style else html.escape(code.rstrip("\n"))
    # One table per code block: the delegate finds them in order to place the copy buttons.
    return (
        f'<table width="100%" cellpadding="{CODE_CELL_PADDING}" cellspacing="0" bgcolor="{bg}" '
        f'style="margin-top:6px; margin-bottom:6px;"><tr><td>'
        f'<pre style="font-family:monospace; margin:0; color:{fg};">{body}</pre></td></tr></table>'
    )


def _fence(_renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    tok = tokens[idx]
    lang = (tok.info or "").strip().split(" ")[0]
    if env.get("open_fence") and not any(t.type == "fence" for t in tokens[idx + 1 :]):
        # A block still being written changes with every delta: highlighting it each frame
        # would cost more than a frame; it is highlighted once, when its fence closes.
        return _code_html(tok.content, "", "", env["code_bg"], env["code_fg"])
    return _code_html(
        tok.content, lang, env["style"], env["code_bg"], env["code_fg"], highlight=env["highlight"]
    )


def _image(_renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    tok = tokens[idx]
    src = html.escape(str(tok.attrGet("src") or ""), quote=True)
    alt = html.escape(tok.content or "image")
    return f'<a href="{src}">[image: {alt}]</a>'


def _table_open(_renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    return (
        f'<table class="{TABLE_CLASS}" border="0" cellspacing="1" '
        f'cellpadding="{TABLE_CELL_PADDING}" bgcolor="{TABLE_BORDER}" '
        'style="margin-top:4px; margin-bottom:8px;">'
    )


def _bullet_list_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    # A task list shows its ballot boxes instead of bullets.
    if "contains-task-list" in str(tokens[idx].attrGet("class") or ""):
        return '<ul style="list-style-type: none;">\n'
    return str(renderer.renderToken(tokens, idx, options, env))


# A quote has a bar down its left side: Qt's rich text draws no border on one side of a
# block, so the quote sits in a table whose first, narrow cell is the bar.
QUOTE_BAR = "#9aa4b2"


def _blockquote_open(_renderer: Any, _tokens: Any, _idx: int, _options: Any, _env: Any) -> str:
    return (
        '<table cellspacing="0" cellpadding="0" style="margin-top:2px; margin-bottom:6px;">'
        f'<tr><td width="3" bgcolor="{QUOTE_BAR}"></td><td style="padding-left:10px;">'
    )


def _blockquote_close(_renderer: Any, _tokens: Any, _idx: int, _options: Any, _env: Any) -> str:
    return "</td></tr></table>\n"


def _html_inline(_renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    # Raw HTML is off, so inline HTML only comes from the task-list plugin's checkboxes,
    # which Qt's rich text cannot show: they become ballot boxes.
    content = str(tokens[idx].content)
    if "checkbox" in content:
        return "☑" if "checked" in content else "☐"
    return html.escape(content)


def _md(text: str = "", linkify: bool | None = None) -> MarkdownIt:
    """The shared parser for `text`, built on first use so an empty window never imports it.

    Linkify costs about three times the rest of the parse, so text in which linkify's own
    quick test finds nothing that could be a bare link is parsed by a twin without it
    (`linkify`: that test's answer, when the caller knows it already).
    """
    if linkify is None:
        linkify = _pretest(text)
    return _parsers(linkify)


def _pretest(text: str) -> bool:
    """linkify's quick test: whether `text` may hold a bare link (never False when it does)."""
    linking = _parsers(True).linkify
    return linking is not None and bool(linking.pretest(text))


_LINKS_READY = False
# Every bare link linkify finds holds one of these (a scheme's colon or slashes, a dot of a
# domain, www., an e-mail's @) or is localhost.
_MAY_LINK = re.compile(r"[.:/@]|localhost", re.IGNORECASE)


def links_ready() -> bool:
    """Whether linkify's patterns are compiled (`warm_links`): finding bare links costs only
    their matching."""
    return _LINKS_READY


def may_link(text: str) -> bool:
    """Whether `text` may hold a bare link (never False when linkify would find one)."""
    return _MAY_LINK.search(text) is not None


def warm_links() -> None:
    """Compile linkify's patterns: those built with its parser and those it compiles at its
    first match (~35 ms in all, once)."""
    global _LINKS_READY
    _parsers(True).render("see https://example.com/a, www.example.org and a@example.net")
    _LINKS_READY = True


class GrowingPretest:
    """`_pretest` of a text that grows at its end (the block a streaming reply is writing):
    the quick test is a regular expression run over the whole text, ~0.3 ms a frame for a
    long paragraph, yet only the end is new. Once it found something it stays found (a
    "maybe" costs only speed); else only what was added is looked at, with some text before
    it (the test's patterns are short)."""

    OVERLAP = 64

    __slots__ = ("_found", "_text")

    def __init__(self) -> None:
        self._text = ""
        self._found = False

    def __call__(self, text: str) -> bool:
        if self._text and text.startswith(self._text):
            found = self._found or _pretest(text[max(0, len(self._text) - self.OVERLAP) :])
        else:
            found = _pretest(text)
        self._text, self._found = text, found
        return found


@lru_cache(maxsize=2)
def _parsers(linkify: bool) -> MarkdownIt:
    from markdown_it import MarkdownIt
    from mdit_py_plugins.tasklists import tasklists_plugin

    # GitHub's flavour, as models write it: tables, ~~strikethrough~~, bare URLs as links,
    # - [ ] task lists. Raw HTML off: a reply can never inject markup, scripts or pixels.
    md = MarkdownIt("gfm-like", {"html": False, "linkify": linkify, "breaks": True})
    md.use(tasklists_plugin)
    md.add_render_rule("fence", _fence)
    md.add_render_rule("code_block", _fence)
    md.add_render_rule("image", _image)
    md.add_render_rule("table_open", _table_open)
    md.add_render_rule("html_inline", _html_inline)
    md.add_render_rule("bullet_list_open", _bullet_list_open)
    md.add_render_rule("blockquote_open", _blockquote_open)
    md.add_render_rule("blockquote_close", _blockquote_close)
    forget_import_sources()  # markdown-it and its plugins were just imported
    return md


def render_markdown_fresh(
    text: str,
    style: str,
    code_bg: str,
    code_fg: str,
    *,
    open_fence: bool = False,
    highlight: Highlighter = highlighted,
    linkify: bool | None = None,
) -> str:
    """`render_markdown` for text rendered once (a streaming tail).

    `open_fence`: the text ends inside a code block still being written, which is shown
    without syntax colours until it closes. `highlight` colours a closed code block (a
    `MarkdownCache` passes its cached one). `linkify`: whether bare links may be in it, if
    known (see `_md`).
    """
    env = {
        "style": style,
        "code_bg": code_bg,
        "code_fg": code_fg,
        "open_fence": open_fence,
        "highlight": highlight,
    }
    return str(_md(text, linkify).render(text, env))


# A fence that opens a text, at its first column: ``` (whose info may hold no backtick) or ~~~.
_OPENING_FENCE = re.compile(r"(`{3,})[^`\n]*\n|(~{3,})[^\n]*\n")


def open_code(text: str) -> tuple[str, str] | None:
    """A text that is one code block still being written, from its fence to its end, as (its
    fence line, its code); None for any other text (or one that may close: it is parsed)."""
    m = _OPENING_FENCE.match(text)
    if m is None or "\r" in text or "\0" in text:
        return None
    mark = m.group(1) or m.group(2)
    code = text[m.end() :]
    for line in code.split("\n"):
        fence = _FENCE.match(line)
        if fence is not None and fence.group(1)[0] == mark[0] and len(fence.group(1)) >= len(mark):
            return None
    return text[: m.end()], code


_CLOSING_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")


def closed_code(text: str) -> tuple[str, str] | None:
    """A text that is one closed code block and blank lines, as (its language, its code as
    the parser hands it over); None for any other text (which is parsed)."""
    m = _OPENING_FENCE.match(text)
    if m is None or "\r" in text or "\0" in text:
        return None
    mark = m.group(1) or m.group(2)
    lines = text[m.end() :].split("\n")
    for i, line in enumerate(lines):
        close = _CLOSING_FENCE.fullmatch(line)
        if close is not None and close.group(1)[0] == mark[0] and len(close.group(1)) >= len(mark):
            if any(rest.strip() for rest in lines[i + 1 :]):
                return None
            lang = text[len(mark) : m.end() - 1].strip().split(" ")[0]
            return lang, "".join(f"{code}\n" for code in lines[:i])
        if _FENCE.match(line) is not None:
            return None  # a fence-like line the parser may read otherwise
    return None


def open_code_html(text: str, code_bg: str, code_fg: str) -> str | None:
    """The HTML of a text that is one code block still being written (`open_code`), as
    `render_markdown_fresh(text, open_fence=True)` makes it, without the parse (a growing code
    block is the largest block a reply writes: parsing it each frame cost ~1 ms); None for
    any other text."""
    found = open_code(text)
    return None if found is None else _code_html(found[1], "", "", code_bg, code_fg)


def render_inline_fresh(text: str) -> str:
    """The inline markdown of one table cell as the parser renders it inside its table (the
    same parser, its inline rules alone: no block parse of the table around it)."""
    env = {"style": "", "code_bg": "", "code_fg": "", "open_fence": False, "highlight": highlighted}
    return str(_md(text).renderInline(text, env))


def _fence_walk(lines: list[str]) -> Iterator[tuple[int, str, bool, bool]]:
    """Each line (with its end) as (offset after it, line, inside a fence before it, inside one
    after it): a fence's opening line is (.., False, True), its closing line (.., True, False).

    The one place that says where fenced code blocks open and close in a growing text.
    """
    fence = ""
    pos = 0
    for line in lines:
        pos += len(line)
        before = bool(fence)
        m = _FENCE.match(line)
        if m:
            mark = m.group(1)
            if not fence:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip(" `~\r\n"):
                fence = ""
        yield pos, line, before, bool(fence)


def ends_in_open_fence(text: str) -> bool:
    """Whether `text` ends inside a fenced code block (its closing fence not written yet)."""
    walk = _fence_walk(text.splitlines(keepends=True))
    return any(inside and pos == len(text) for pos, _line, _before, inside in walk)


def closed_fences(text: str) -> int:
    """How many fenced code blocks `text` closes (each is coloured once its fence closes)."""
    walk = _fence_walk(text.splitlines(keepends=True))
    return sum(before and not after for _pos, _line, before, after in walk)


def render_markdown(
    text: str, style: str = "friendly", code_bg: str = "#f3f5f8", code_fg: str = "#1c2330"
) -> str:
    """HTML for QTextDocument; images become plain links, so nothing remote is ever fetched.

    Uncached: a view renders through its `MarkdownCache`."""
    return render_markdown_fresh(text, style, code_bg, code_fg)


def stable_split(text: str) -> int:
    """Where a growing text's finished blocks end: after its last blank line outside a fence.

    Text before the offset no longer changes its rendering as more text streams in (bar the
    rare reference link defined later), so it can be rendered once and cached.
    """
    cut = 0
    for pos, line, _before, inside in _fence_walk(text.splitlines(keepends=True)):
        if not inside and not line.strip() and pos < len(text):
            cut = pos
    return cut


def split_streaming(text: str) -> tuple[str, str]:
    """A growing reply as (finished blocks, the block still being written)."""
    cut = stable_split(text)
    return text[:cut], text[cut:]


def _may_join(line: str, complete: bool, in_list: bool) -> bool:
    """Whether a line after a blank line may belong to the block before it (so no cut there)."""
    body = line.rstrip("\r\n")
    if not body.strip() or body[0] in " \t":
        return True  # another blank line, a list item's continuation or indented code
    if not in_list:
        return False
    return bool(_LIST_ITEM.match(body) or (not complete and _LIST_START.match(body)))


def stream_chunks(text: str) -> tuple[list[str], str]:
    """A growing reply as (its finished block groups, the block still being written).

    The groups join to `split_streaming`'s prefix. Inner group ends are blank lines outside a
    fence followed by a block that cannot continue the one before (no loose list is cut between
    its items), so each group renders alone as it does inside the whole text and a streaming
    reply renders each group once. Only the last group may still grow: when the block written
    after it continues its list, the two become one group.
    """
    lines = text.splitlines(keepends=True)
    cut = 0
    cuts: list[int] = []
    in_list = False
    after_blank = True
    for i, (pos, line, before, _after) in enumerate(_fence_walk(lines)):
        if before:
            continue  # inside a code block, or its closing fence
        blank = not line.strip()
        if not blank:
            if _LIST_ITEM.match(line):
                in_list = True
            elif after_blank and line[0] not in " \t":
                in_list = False
        elif pos < len(text):
            cut = pos
            nxt = lines[i + 1]
            complete = i + 2 < len(lines) or nxt.endswith(("\n", "\r"))
            if not _may_join(nxt, complete, in_list):
                cuts.append(pos)
        after_blank = blank
    if cut and (not cuts or cuts[-1] != cut):
        cuts.append(cut)
    chunks = [text[a:b] for a, b in zip([0, *cuts], cuts, strict=False)]
    return chunks, text[cut:]


class ChunkScan:
    """`stream_chunks` of one growing text, each frame scanning only what its last final
    group boundary leaves: the text grows at its end, and a boundary with a finished line
    after it never moves (the scan there starts as at the text's start: after a blank line,
    outside any fence, before a block that continues none), so a frame costs the last group
    and what came since, not the whole reply. Text that was not only added to is scanned
    whole again."""

    __slots__ = ("_chunks", "_prefix", "_text", "scanned")

    def __init__(self) -> None:
        self._text = ""  # the text last scanned
        self._prefix = ""  # its final groups joined
        self._chunks: list[str] = []
        self.scanned = 0
        """Characters scanned so far (the regression test counts them)."""

    def scan(self, text: str) -> tuple[list[str], str]:
        if not text.startswith(self._text):
            self._prefix, self._chunks = "", []
        self._text = text
        start = len(self._prefix)
        more, tail = stream_chunks(text[start:])
        self.scanned += len(text) - start
        chunks = self._chunks + more
        if len(more) > 1:
            # All but the last boundary have a finished line after them: they are final.
            self._chunks = chunks[:-1]
            self._prefix += "".join(more[:-1])
        return chunks, tail


def finished_groups(text: str) -> list[str] | None:
    """A finished reply cut into the block groups it streamed in, each rendering alone as it
    does inside the whole text; None when the text cannot be cut that way.

    The block still being written when the reply ended becomes the last group; the rule that
    keeps a list whole joins it to the group before when it continues that group's list.
    """
    if _REF_DEF.search(text) or text != text.rstrip(" \t"):
        # Reference links resolve across groups; spaces that end the whole text are dropped by
        # the parser there but kept as content (in a quoted code block) when a group ends them.
        return None
    # A block after a blank line, one that continues nothing, closes the real last block.
    groups, tail = stream_chunks(text + "\n\nx")
    if tail != "x" or "".join(groups) != text + "\n\n":
        return None  # the text ends inside a code block, or ends without a newline in one
    return groups


TITLES = 512  # chats' titles held as plain text


# A title markdown reads as its own words: letters, digits and punctuation that is never
# syntax (no emphasis, code, link, escape or entity marks), beginning with a letter or digit
# (no list, heading, quote or indented code) that does not start an ordered list.
_PLAIN_TITLE = re.compile(r"(?!\d{1,9}[.)](?:\s|$))[^\W_](?:[^\W_]|[ ,.:;!?'\"()/@%=$-])*")


@lru_cache(maxsize=TITLES)
def title_text(title: str) -> str:
    """A chat's title as plain text (`plain_text`), cached: tabs, the strip and headers ask for
    every chat's title again at each refresh (twice at a reply's start and end), and parsing
    its markdown took a few milliseconds of the frame that shows the reply's first words. A
    title with no markdown in it is its own plain text, without the parser (whose first use
    compiles linkify's patterns: ~15 ms of the first paint at start-up)."""
    if _PLAIN_TITLE.fullmatch(title):
        return title.strip()
    return plain_text(title)


def code_blocks(text: str) -> list[str]:
    """The source text of each fenced or indented code block, in document order."""
    return [
        t.content.rstrip("\n") for t in _md(text).parse(text) if t.type in ("fence", "code_block")
    ]


def plain_text(text: str) -> str:
    """A reply as a reader hears or a paste receives it: no markdown marks, tables by cells.

    Uncached: a view reads it through its `MarkdownCache`."""
    out: list[str] = []
    lists: list[list[int]] = []  # per open list: [next number] or [-1] for bullets
    for tok in _md(text).parse(text):
        kind = tok.type
        if kind == "inline":
            for child in tok.children or ():
                if child.type in ("text", "code_inline"):
                    out.append(child.content)
                elif child.type in ("softbreak", "hardbreak"):
                    out.append("\n")
                elif child.type == "image":
                    out.append(child.content)
                elif child.type == "html_inline" and "checkbox" in child.content:
                    out.append("☑" if "checked" in child.content else "☐")
        elif kind in ("fence", "code_block"):
            out.append(tok.content.rstrip("\n") + "\n\n")
        elif kind in ("bullet_list_open", "ordered_list_open"):
            start = int(tok.attrGet("start") or 1) if kind == "ordered_list_open" else -1
            lists.append([start])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
            if not lists:
                out.append("\n")
        elif kind == "list_item_open" and lists:
            number = lists[-1][0]
            indent = "  " * (len(lists) - 1)
            if number < 0:
                out.append(f"{indent}• ")
            else:
                out.append(f"{indent}{number}. ")
                lists[-1][0] += 1
        elif kind == "paragraph_close":
            out.append("\n" if lists else "\n\n")
        elif kind == "heading_close":
            out.append("\n\n")
        elif kind in ("th_close", "td_close"):
            out.append("\t")
        elif kind == "tr_close":
            if out and out[-1] == "\t":
                out.pop()
            out.append("\n")
        elif kind == "table_close":
            out.append("\n")
        elif kind == "hr":
            out.append("———\n\n")
    return "".join(out).strip()


def table_lines(text: str) -> list[str] | None:
    """`text` as the lines of one table alone (its header, its delimiter row, then rows,
    each line starting with a pipe; blank lines may end it), or None."""
    lines = text.rstrip("\n").split("\n")
    if len(lines) < 3 or not _TABLE_DELIMITER.match(lines[1]):
        return None
    if not all(line.startswith("|") and "\r" not in line for line in lines):
        return None
    return lines


def _table_aligns(delimiter: str) -> list[str]:
    """The `<td>` attributes of a table's columns from its delimiter row, as markdown-it's
    table rule reads them (`| :-- | :-: | --: |`: left, center, right)."""
    from markdown_it.common.utils import mdTrim

    parts = delimiter.split("|")
    aligns: list[str] = []
    for i, part in enumerate(parts):
        t = mdTrim(part)
        if not t and i in (0, len(parts) - 1):
            continue
        side = "center" if t[:1] == ":" and t[-1:] == ":" else "right" if t[-1:] == ":" else ""
        side = side or ("left" if t[:1] == ":" else "")
        aligns.append(f' style="text-align:{side}"' if side else "")
    return aligns


def _table_row_html(aligns: list[str], row: str, inline: Callable[[str], str]) -> tuple[str, int]:
    """The `<tr>` of one body row (a line starting with a pipe, which nothing but a row can
    be) under a header whose columns are `aligns`, as markdown-it's table rule makes it: the
    row split at unescaped pipes, cut or padded to the header's columns, each cell's inline
    markdown rendered by `inline` (the parser's inline rules): no parse of the whole table.
    With it, how many cells the line has."""
    from markdown_it.common.utils import mdTrim
    from markdown_it.rules_block.table import escapedSplit

    cells = escapedSplit(mdTrim(row))
    if cells and cells[0] == "":
        cells.pop(0)
    if cells and cells[-1] == "":
        cells.pop()
    out = ["<tr>\n"]
    for i, attrs in enumerate(aligns):
        content = mdTrim(cells[i]) if i < len(cells) and cells[i] else ""
        out.append(f"<td{attrs}>{inline(content)}</td>\n")
    out.append("</tr>\n")
    return "".join(out), len(cells)


_K = TypeVar("_K")
_V = TypeVar("_V")


class _Lru(Generic[_K, _V]):
    """At most `maxsize` values by key, the least recently used dropped first."""

    __slots__ = ("_held", "_maxsize")

    def __init__(self, maxsize: int) -> None:
        self._held: OrderedDict[_K, _V] = OrderedDict()
        self._maxsize = maxsize

    def get(self, key: _K) -> _V | None:
        """The value kept for `key` (now the most recently used), or None."""
        found = self._held.get(key)
        if found is not None:
            self._held.move_to_end(key)
        return found

    def put(self, key: _K, value: _V) -> _V:
        """Keep `value` for `key` as the most recently used; returns it."""
        self._held[key] = value
        self._held.move_to_end(key)
        while len(self._held) > self._maxsize:
            self._held.popitem(last=False)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._held

    def __len__(self) -> int:
        return len(self._held)

    def clear(self) -> None:
        self._held.clear()


class _Tables:
    """A table's HTML from its rows' HTML, each row rendered once: a table growing a row at a
    time (a streaming reply) costs one row's parse per frame, not the whole table's.

    The row's HTML is the parser's own (the row rendered under the table's header), so the
    table reads exactly as rendered whole; anything that might not is rendered whole.
    """

    def __init__(self, render: Callable[[str], str], inline: Callable[[str], str]) -> None:
        self._render = render
        self._inline = inline
        # head lines -> (thead HTML, its columns' <td> attributes)
        self._heads: _Lru[str, tuple[str, list[str]]] = _Lru(TABLE_HEADS)
        self._rows: _Lru[tuple[str, str], tuple[str, int]] = _Lru(TABLE_ROWS)
        """(head, row line) -> (its <tr>, how many cells the line has)"""
        self.rows_rendered = 0
        """Rows parsed so far (the test of the incremental layout counts them)."""

    def html(self, text: str) -> str | None:
        lines = table_lines(text)
        if lines is None:
            return None
        head = f"{lines[0]}\n{lines[1]}"
        found = self._head(head)
        if found is None:
            return None
        thead, aligns = found
        rows = [self._row(head, aligns, line) for line in lines[2:]]
        if sum(len(aligns) - cells for _html, cells in rows) > MAX_AUTOCOMPLETED_CELLS:
            return None  # (the parser stops such a table early: rendered whole)
        return f"{thead}{_TBODY}{''.join(html for html, _cells in rows)}</tbody>\n</table>\n"

    def _head(self, head: str) -> tuple[str, list[str]] | None:
        found = self._heads.get(head)
        if found is None:
            html = self._render(head + "\n")
            cut = html.find("</thead>\n")
            if cut < 0 or not html.endswith("</thead>\n</table>\n"):
                return None
            aligns = _table_aligns(head.split("\n")[1])
            if html.count("</th>") != len(aligns):
                return None
            found = self._heads.put(head, (html[: cut + len("</thead>\n")], aligns))
        return found

    def _row(self, head: str, aligns: list[str], line: str) -> tuple[str, int]:
        key = (head, line)
        found = self._rows.get(key)
        if found is None:
            found = self._rows.put(key, _table_row_html(aligns, line, self._inline))
            self.rows_rendered += 1
        return found

    def clear(self) -> None:
        self._heads.clear()
        self._rows.clear()


# How many results a view keeps of each (least recently used dropped first).
TABLE_HEADS = 64
TABLE_ROWS = 2048
RENDERED = 1024
RENDERED_FINISHED = 64
HIGHLIGHTED = 256
PLAIN = 512


class _Colours:
    """Coloured code by (code, language, style), least recently used dropped first; what a
    streaming reply asked for and was shown plain is coloured later (`colour_one`), a slice
    at a time."""

    def __init__(self) -> None:
        self.done: _Lru[tuple[str, str, str], str] = _Lru(HIGHLIGHTED)
        self.pending: OrderedDict[tuple[str, str, str], None] = OrderedDict()
        # The oldest pending block, being coloured slice by slice.
        self._job: tuple[tuple[str, str, str], Highlighting] | None = None

    def now(self, code: str, lang: str, style: str) -> str:
        """Coloured at once (a finished reply)."""
        key = (code, lang, style)
        found = self.done.get(key)
        if found is None:
            found = highlighted(code, lang, style)
            self._keep(key, found)
        return found

    def _keep(self, key: tuple[str, str, str], coloured: str) -> None:
        self.done.put(key, coloured)
        self.pending.pop(key, None)
        if self._job is not None and self._job[0] == key:
            self._job = None

    def later(self, code: str, lang: str, style: str, *, now: bool = True) -> str:
        """Coloured if it was before (and `now`), else plain now and coloured at the next
        `colour_one` (a block coloured before is just shown so then)."""
        key = (code, lang, style)
        found = self.done.get(key) if now else None
        if found is not None:
            return found
        self.pending[key] = None
        return html.escape(code.rstrip("\n"))

    def colour_one(self, budget: float) -> bool:
        """Colour the oldest block shown plain for about `budget` seconds; whether one was
        finished (it may take several calls: the rest waits in the job)."""
        if not self.pending:
            return False
        key = next(iter(self.pending))
        if key in self.done:  # coloured before: shown plain only until now
            del self.pending[key]
            return True
        if self._job is None or self._job[0] != key:
            self._job = (key, Highlighting(*key))
        job = self._job[1]
        if not job.step(budget):
            return False
        assert job.html is not None
        self._keep(key, job.html)
        return True

    def clear(self) -> None:
        self.done.clear()
        self.pending.clear()
        self._job = None


class MarkdownCache:
    """One view's rendered markdown: HTML by (text, look), plain text, coloured code.

    Each result depends only on its arguments, so a hit is never stale; `clear` hands the
    memory back (the owning `RenderCache.invalidate`). Bounded: least recently used first out.
    """

    def __init__(self, *, at_start: bool = False) -> None:
        self.at_start = at_start
        """Whether a render may be provisional (see `provisional`): a view shown at start-up,
        until its window's first paint (`renders_final`); a view made later never is."""
        self.colours = _Colours()
        """Coloured code; a streaming reply's closed blocks are coloured in idle time."""
        self.provisional = 0
        """How many renders so far were provisional: a code block shown plain for want of its
        lexer or formatter loaded (`colour_ready`), bare links not linked yet for want of
        linkify's patterns compiled (`links_ready`). A caller that saw it grow lays the text
        out again once `warm_step` has done what was wanting; none is cached here."""
        self.links_waiting = False
        """Whether a render left links for `warm_step` to make ready."""

        def colour(code: str, lang: str, style: str) -> str:
            if not self.at_start or colour_ready(lang, style):
                return self.colours.now(code, lang, style)
            self.provisional += 1
            return self.colours.later(code, lang, style)

        # A table's rows hold no code block: its HTML depends on its text alone.
        self.tables = _Tables(
            lambda text: render_markdown_fresh(text, "", "", ""), render_inline_fresh
        )
        """Tables by their rows' HTML (a growing table is parsed a row at a time)."""

        def fresh(
            text: str, style: str, code_bg: str, code_fg: str, *, open_fence: bool = False
        ) -> str:
            links: bool | None = None  # (linkify's own quick test decides)
            if self.at_start and not links_ready():
                # Linkify's patterns cost ~35 ms to compile, the first chat's first paint
                # would wait for them: a text that may hold a bare link shows it as text
                # until `warm_step`, then is laid out again.
                links = False
                if may_link(text):
                    self.provisional += 1
                    self.links_waiting = True
            else:
                table = None if open_fence else self.tables.html(text)
                if table is not None:
                    return table
            return render_markdown_fresh(
                text,
                style,
                code_bg,
                code_fg,
                open_fence=open_fence,
                highlight=colour,
                linkify=links,
            )

        rendered = _Final(fresh, RENDERED, self)

        def finished(text: str, style: str, code_bg: str, code_fg: str) -> str:
            groups = finished_groups(text)
            if groups is None or len(groups) < 2:
                return rendered(text, style, code_bg, code_fg)
            *done, last = groups
            head = [rendered(g, style, code_bg, code_fg) for g in done]
            return "".join(head) + fresh(last, style, code_bg, code_fg)

        growing = GrowingPretest()

        def streamed(
            text: str,
            style: str,
            code_bg: str,
            code_fg: str,
            *,
            open_fence: bool = False,
            tail: bool = False,
            first: bool = False,
        ) -> tuple[str, bool]:
            table = None if open_fence else self.tables.html(text)
            if table is not None:
                return table, False
            code = open_code_html(text, code_bg, code_fg) if open_fence else None
            if code is not None:
                return code, False
            plain: list[str] = []

            def later(code: str, lang: str, style: str) -> str:
                found = self.colours.later(code, lang, style, now=not first)
                if (code, lang, style) in self.colours.pending:
                    plain.append(code)
                return found

            block = None if open_fence else closed_code(text)
            if block is not None:  # a code block just closed: as parsed, without the parse
                lang, source = block
                return _code_html(source, lang, style, code_bg, code_fg, highlight=later), bool(
                    plain
                )
            html = render_markdown_fresh(
                text,
                style,
                code_bg,
                code_fg,
                open_fence=open_fence,
                highlight=later,
                linkify=growing(text) if tail else None,
            )
            return html, bool(plain)

        self.fresh = fresh
        """`render_markdown_fresh` with this cache's coloured code: text rendered once."""
        self.streamed = streamed
        """`fresh` for the block being written (`tail`: a text that grows at its end, frame
        after frame) or a group just finished (`first`): its code blocks closed since the last
        idle step are shown plain (not coloured on the frame's path: pygments takes
        milliseconds, and a block drawn anew in colours as it closes costs a layout and a
        drawing of it all), even one coloured before when `first`; with whether any was
        (`colours.colour_one` colours them, then it is rendered again)."""
        self.render = rendered
        """`render_markdown`, cached."""
        self.render_finished = _Final(finished, RENDERED_FINISHED, self)
        """`render` of a reply that streamed here: its finished groups come from `render`,
        where they were rendered while it streamed, so only the last block is rendered now."""
        self.plain_text = lru_cache(maxsize=PLAIN)(plain_text)
        """`plain_text`, cached."""
        self._finals = (rendered, self.render_finished)

    def renders_final(self) -> None:
        """From now on every render is final (what a provisional one wanted is loaded as it
        is needed, as by any render after start-up's first paint)."""
        self.at_start = False

    def waiting(self) -> bool:
        """Whether a provisional render waits for `warm_step`."""
        return self.links_waiting or bool(self.colours.pending)

    def warm_step(self, budget: float) -> bool:
        """Idle time: make ready what a provisional render wanted, about `budget` seconds of
        it (more for linkify's patterns, compiled at once); whether a piece was finished."""
        if self.links_waiting:
            warm_links()
            self.links_waiting = False
            return True
        return self.colours.colour_one(budget)

    def clear(self) -> None:
        """Forget every result."""
        self.colours.clear()
        self.tables.clear()
        self.plain_text.cache_clear()
        for cache in self._finals:
            cache.clear()

    def __len__(self) -> int:
        """Results held, all kinds together."""
        held = len(self.colours.done) + len(self.colours.pending)
        held += self.plain_text.cache_info().currsize
        return held + sum(len(cache) for cache in self._finals)


class _Final:
    """`fn`'s results by their arguments, the `maxsize` least recently used kept, except one
    that was provisional (its `owner.provisional` grew)."""

    __slots__ = ("_fn", "_held", "_owner")

    def __init__(self, fn: Callable[..., str], maxsize: int, owner: MarkdownCache) -> None:
        self._fn, self._owner = fn, owner
        self._held: _Lru[tuple[str, ...], str] = _Lru(maxsize)

    def __call__(self, *args: str) -> str:
        found = self._held.get(args)
        if found is not None:
            return found
        before = self._owner.provisional
        found = self._fn(*args)
        if self._owner.provisional == before:
            self._held.put(args, found)
        return found

    def __len__(self) -> int:
        return len(self._held)

    def clear(self) -> None:
        self._held.clear()
