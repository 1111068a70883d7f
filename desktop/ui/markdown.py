"""Markdown to Qt-rich-text HTML: CommonMark without raw HTML, pygments code, no remote images."""

from __future__ import annotations

import html
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from pygments import highlight  # type: ignore[import-untyped]
from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]
from pygments.lexers import get_lexer_by_name  # type: ignore[import-untyped]
from pygments.lexers.special import TextLexer  # type: ignore[import-untyped]
from pygments.util import ClassNotFound  # type: ignore[import-untyped]

# Raw HTML off: a reply can never inject markup, scripts or tracking pixels.
_MD = MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True})


def _lexer(lang: str) -> Any:
    try:
        return get_lexer_by_name(lang) if lang else TextLexer()
    except ClassNotFound:
        return TextLexer()


def _code_html(code: str, lang: str, style: str, bg: str, fg: str) -> str:
    fmt = HtmlFormatter(nowrap=True, noclasses=True, style=style)
    body = highlight(code.rstrip("\n"), _lexer(lang), fmt)
    # One table per code block: the delegate finds them in order to place the copy buttons.
    return (
        f'<table width="100%" cellpadding="10" cellspacing="0" bgcolor="{bg}" '
        f'style="margin-top:6px; margin-bottom:6px;"><tr><td>'
        f'<pre style="font-family:monospace; margin:0; color:{fg};">{body}</pre></td></tr></table>'
    )


def _fence(_renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    tok = tokens[idx]
    lang = (tok.info or "").strip().split(" ")[0]
    return _code_html(tok.content, lang, env["style"], env["code_bg"], env["code_fg"])


def _image(_renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    tok = tokens[idx]
    src = html.escape(str(tok.attrGet("src") or ""), quote=True)
    alt = html.escape(tok.content or "image")
    return f'<a href="{src}">[image: {alt}]</a>'


_MD.add_render_rule("fence", _fence)
_MD.add_render_rule("code_block", _fence)
_MD.add_render_rule("image", _image)


@lru_cache(maxsize=1024)
def render_markdown(
    text: str, style: str = "friendly", code_bg: str = "#f3f5f8", code_fg: str = "#1c2330"
) -> str:
    """HTML for QTextDocument; images become plain links, so nothing remote is ever fetched."""
    return str(_MD.render(text, {"style": style, "code_bg": code_bg, "code_fg": code_fg}))


def code_blocks(text: str) -> list[str]:
    """The source text of each fenced or indented code block, in document order."""
    return [t.content.rstrip("\n") for t in _MD.parse(text) if t.type in ("fence", "code_block")]
