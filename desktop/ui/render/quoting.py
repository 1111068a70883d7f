"""A quote in a reply: the quoted markdown as sent, and the one line the composer shows of it."""

from __future__ import annotations

import re

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_MARKS = re.compile(r"[*_`#>~]+|!?\[([^\]]*)\]\([^)]*\)")
PREVIEW_CHARS = 90


def quoted(markdown: str) -> str:
    """`markdown` as a blockquote, each line behind "> " as written: code fences, their
    language and every indent are kept, so the gateway and the bubble show the same code."""
    lines = markdown.strip("\n").splitlines()
    return "\n".join(f"> {line}" if line.strip() else ">" for line in lines)


def with_quote(quote: str, text: str) -> str:
    """The message sent: the quote, a blank line, then what was typed."""
    if not quote.strip():
        return text
    block = quoted(quote)
    return f"{block}\n\n{text}" if text.strip() else block


def preview(quote: str) -> str:
    """The quote in one line for the reply-to bar: its first words, without fence lines."""
    words = " ".join(
        _MARKS.sub(lambda m: m.group(1) or "", line).strip()
        for line in quote.splitlines()
        if line.strip() and not _FENCE.match(line)
    )
    return words if len(words) <= PREVIEW_CHARS else words[: PREVIEW_CHARS - 1].rstrip() + "…"


def source_of(selected: str, markdown: str) -> str:
    """The markdown a selection was made from, where it can be found: a selection inside a
    code block comes back in its fence (with the language), one found as written comes as
    written; otherwise the selected text itself."""
    text = selected.strip("\n")
    if not text:
        return ""
    at = markdown.find(text)
    if at < 0:
        return text
    fence = ""
    for line in markdown[:at].splitlines():
        m = _FENCE.match(line)
        if m and not fence:
            fence = line.strip()
        elif m and fence and not m.group(2).strip():
            fence = ""
    if fence:
        closing = re.match(r"[`~]+", fence)
        return f"{fence}\n{text}\n{closing.group(0) if closing else '```'}"
    return text
