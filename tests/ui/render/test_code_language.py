"""A code block's language: pygments' own lexers colour it; any other name is plain text at
once, without pygments' plugin search through every installed package (~50 ms on the UI thread)."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator
from typing import Any

import pytest

from desktop.ui.render import markdown


@pytest.fixture
def entry_point_scans(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Calls to importlib.metadata.entry_points (pygments' plugin search), from a cold start."""
    from pygments import plugin  # type: ignore[import-untyped]

    scans: list[Any] = []
    real = importlib.metadata.entry_points

    def counted(*args: Any, **kwargs: Any) -> Any:
        scans.append(args or kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", counted)
    plugin.iter_entry_points.cache_clear()
    markdown._lexer.cache_clear()
    yield scans
    plugin.iter_entry_points.cache_clear()
    markdown._lexer.cache_clear()


def test_a_language_pygments_does_not_know_is_plain_text_without_a_plugin_search(
    entry_point_scans: list[Any],
) -> None:
    html = markdown.highlighted('x = "<1>"', "nosuchlanguage", "friendly")

    assert html.strip() == 'x = "&lt;1&gt;"'  # the code, escaped, in no colour
    assert entry_point_scans == []


def test_a_language_pygments_ships_is_coloured_whatever_its_case(
    entry_point_scans: list[Any],
) -> None:
    for lang in ("python", "Python", "PY"):
        html = markdown.highlighted("x = 1", lang, "friendly")
        assert '<span style="color: #40A070">1</span>' in html, lang  # the number coloured
    assert entry_point_scans == []
