"""A code block and a paragraph streaming in: the code block being written is not parsed each
frame, and a paragraph's quick test for bare links looks at what was added; both render
exactly as parsed whole."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from desktop.ui.render import markdown
from desktop.ui.render.markdown import (
    GrowingPretest,
    MarkdownCache,
    closed_code,
    open_code_html,
    render_markdown_fresh,
)

_LINES = st.sampled_from(
    [
        "x = 1",
        "\tindented() <b> & 'q'",
        "    deep",
        "",
        "  ```",
        "```",
        "````",
        "~~~",
        "```python",
        "** not bold **",
        "| a | b |",
        "中文 ü",
        "http://example.org",
    ]
)
_FENCES = st.sampled_from(["```\n", "```python\n", "````js\n", "~~~\n", "~~~ a`b\n", "``` a`b\n"])
_CLOSES = st.sampled_from(["```", "````", "  ```", "```  ", "~~~", "```~", "``", "``` x"])


@settings(max_examples=300, deadline=None)
@given(_FENCES, st.lists(_LINES, max_size=8), st.booleans())
@example("```python\n", ["x = 1", "y"], False)
def test_a_code_block_being_written_renders_as_parsed(
    fence: str, lines: list[str], newline: bool
) -> None:
    text = fence + "\n".join(lines) + ("\n" if newline else "")
    fast = open_code_html(text, "#fff", "#000")
    if fast is not None:
        assert fast == render_markdown_fresh(text, "friendly", "#fff", "#000", open_fence=True)


@settings(max_examples=300, deadline=None)
@given(
    _FENCES, st.lists(_LINES, max_size=8), _CLOSES, st.sampled_from(["", "\n", "\n\n", "\n  \n"])
)
@example("```python\n", ["x = 1"], "```", "\n\n")
def test_a_code_block_that_just_closed_renders_as_parsed(
    fence: str, lines: list[str], close: str, after: str
) -> None:
    text = fence + "".join(f"{line}\n" for line in lines) + close + after
    found = closed_code(text)
    if found is not None:
        lang, code = found
        mark = "plain" if lang == "" else f"<{lang}>"

        def highlight(c: str, language: str, _style: str) -> str:
            return f"{mark}{c!r}{language}"

        parsed = render_markdown_fresh(text, "friendly", "#fff", "#000", highlight=highlight)
        fast = markdown._code_html(code, lang, "friendly", "#fff", "#000", highlight=highlight)
        assert fast == parsed


def test_a_growing_code_block_is_not_parsed_each_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = markdown.render_markdown_fresh
    monkeypatch.setattr(
        markdown, "render_markdown_fresh", lambda t, *a, **k: parsed.append(t) or real(t, *a, **k)
    )
    cache = MarkdownCache()
    text = "```python\n"
    for k in range(40):
        text += f"total_{k} = compute({k})\n"
        html, plain = cache.streamed(text, "friendly", "#fff", "#000", open_fence=True, tail=True)
        assert not plain and f"total_{k}" in html
    assert parsed == [], "the code block being written was parsed"


_PIECES = st.sampled_from(
    ["word ", "x.co", "m ", "www", ".", "example", "@", "http", "://", "a", "\n", "mailto:", "_"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=40))
def test_a_growing_paragraph_never_misses_a_bare_link(pieces: list[str]) -> None:
    # A "maybe" where the whole test says no costs only speed; a "no" where it says maybe would
    # leave a link unlinked.
    growing, text = GrowingPretest(), ""
    for piece in pieces:
        text += piece
        if markdown._pretest(text):
            assert growing(text), f"a bare link in {text!r} was missed"
        else:
            growing(text)


def test_a_growing_paragraph_tests_only_what_was_added(monkeypatch: pytest.MonkeyPatch) -> None:
    looked: list[int] = []
    real = markdown._pretest
    monkeypatch.setattr(markdown, "_pretest", lambda t: looked.append(len(t)) or real(t))
    growing, text = GrowingPretest(), ""
    for k in range(200):
        text += f"word{k} "
        assert not growing(text)
    assert max(looked[1:]) <= GrowingPretest.OVERLAP + 10, "the whole paragraph was looked at"
