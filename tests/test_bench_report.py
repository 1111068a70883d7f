"""The benchmark table names the commit it comes from, and so does every row not rerun."""

from __future__ import annotations

from bench.__main__ import _stale, table
from bench.common import Result, commit_label


def test_table_names_its_commit_and_a_stale_row_names_its_own() -> None:
    fresh = Result("idle", "connected and idle", "<= 1 %", 0.03, "%", met=True, commit="new1234")
    old = Result("memory", "RSS", "<= 150 MB", 86.4, "MB", met=True, note="x", commit="old5678")
    kept = _stale(old)
    text = table([fresh, kept], "new1234")

    assert "Generated from commit new1234" in text
    row = next(line for line in text.splitlines() if line.startswith("| memory"))
    assert "not rerun in this run**; from commit old5678; x" in row
    assert _stale(kept) == kept  # kept again by a later run: still names where it came from


def test_commit_label_is_a_commit_of_this_checkout() -> None:
    label = commit_label()
    assert label.split()[0].isalnum() and len(label.split()[0]) >= 7
