"""Row heights: the Fenwick tree agrees with plain prefix sums after any edits."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from desktop.ui.chat.row_heights import RowHeights

_edits = st.lists(
    st.one_of(
        st.tuples(st.just("set"), st.integers(0, 10_000), st.integers(0, 400)),
        st.tuples(st.just("append"), st.just(0), st.integers(0, 400)),
    ),
    max_size=40,
)


@given(st.lists(st.integers(0, 400), max_size=60), _edits)
def test_tops_and_rows_at_match_prefix_sums(start: list[int], edits: list[tuple]) -> None:
    rows = RowHeights()
    rows.reset(start)
    plain = list(start)
    for kind, row, height in edits:
        if kind == "append":
            rows.append(height)
            plain.append(height)
        elif plain:
            row %= len(plain)
            assert rows.set(row, height) == height - plain[row]
            plain[row] = height
    assert len(rows) == len(plain) and rows.total == sum(plain)
    top = 0
    for row, height in enumerate(plain):
        assert rows.top(row) == top
        assert rows.height(row) == height
        if height:
            assert rows.row_at(top) == row, "a row's first pixel belongs to it"
            assert rows.row_at(top + height - 1) == row, "and so does its last"
        top += height
    if plain:
        assert rows.row_at(-5) == 0
        assert rows.row_at(top + 100) == len(plain) - 1, "below the end: the last row"
    else:
        assert rows.row_at(0) == -1


def test_one_row_resized_moves_only_the_rows_below() -> None:
    rows = RowHeights()
    rows.reset([10] * 10_000)
    rows.set(9_000, 50)
    assert rows.top(9_000) == 90_000
    assert rows.top(9_001) == 90_050
    assert rows.total == 100_040
    assert rows.row_at(90_049) == 9_000 and rows.row_at(90_050) == 9_001
