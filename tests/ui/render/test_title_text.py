"""A chat's title as plain text: a title with no markdown in it is read without the parser
(its first use compiled linkify's patterns in the first paint at start-up), and reads the same."""

from __future__ import annotations

import random

import pytest

from desktop.ui.render import markdown


def test_a_plain_title_is_its_own_text_without_the_markdown_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_parser(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the markdown parser read a title with no markdown in it")

    monkeypatch.setattr(markdown, "_md", no_parser)
    titles = ["Bench chat 0", "Fix the login bug", "Q: why? (draft)", "see http://a.com/x-y"]
    for title in titles:
        assert markdown.title_text.__wrapped__(title) == title
    assert markdown.title_text.__wrapped__("Mix  ") == "Mix"


def test_a_title_read_without_the_parser_reads_as_the_parser_reads_it() -> None:
    # Every title the shortcut takes, from an alphabet of the characters it allows and some it
    # must not (markdown's marks), reads as plain_text reads it.
    alphabet = list("abXZ09é漢 ,.:;!?'\"()/@%=$-") + list("*_`[]<>#&\\~|+")
    rng = random.Random(7)
    taken = 0
    for _ in range(20_000):
        title = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 16)))
        if markdown._PLAIN_TITLE.fullmatch(title):
            taken += 1
            assert title.strip() == markdown.plain_text(title), title
    assert taken > 300
    for syntax in ("1. first", "2) second", "- item", "*bold*", "a _b_ c", "# head", "&amp;"):
        assert markdown._PLAIN_TITLE.fullmatch(syntax) is None, syntax
