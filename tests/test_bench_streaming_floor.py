"""The streaming rows' floor (bench/streaming_floor.py): a bare Qt text view fed the same deltas
on the same schedule shows every one of them, and its latencies are counted as the app's are."""

from __future__ import annotations

from bench.common import run_child
from bench.streaming import RATE, STREAM_S_ENV


def test_the_bare_view_shows_every_delta_of_a_one_second_stream() -> None:
    got = run_child(["-m", "bench.streaming_floor"], 60, **{STREAM_S_ENV: "1"})

    assert got["fed"] == RATE  # one second of the stream, every delta fed
    assert got["on_screen"] == 1.0  # ...and each on screen in a paint after it was due
    assert 0 < got["delta_p99"] <= got["delta_max"] < 1.0
