"""Retry schedules: the delays every retry in the app waits, plain and jittered."""

from __future__ import annotations

import itertools

import pytest

from desktop.common.retry import Retries, RetrySchedule


def test_plain_delays_double_from_the_first_up_to_the_cap() -> None:
    """Re-sends, draft saves and provider probes wait first, 2x, 4x ... then the cap."""
    schedule = RetrySchedule(first=0.5, cap=30.0)
    assert [schedule.delay(n) for n in range(9)] == [0.5, 1, 2, 4, 8, 16, 30, 30, 30]
    assert schedule.delay(10**6) == 30.0, "a very long outage stays at the cap"


def test_jittered_delays_spread_between_the_floor_and_twice_the_plain_delay() -> None:
    """Reconnects: uniform in [first, min(cap, 2 * first * 2**n)], the floor at random 0."""
    schedule = RetrySchedule(first=1.0, cap=30.0, jitter=True)
    assert [schedule.delay(n, lambda: 1.0) for n in range(6)] == [2, 4, 8, 16, 30, 30]
    assert [schedule.delay(n, lambda: 0.0) for n in range(6)] == [1.0] * 6
    assert schedule.delay(2, lambda: 0.5) == 1.0 + 0.5 * (8.0 - 1.0)
    assert schedule.delay(0, lambda: 7.0) == 2.0, "a random number out of [0, 1] is clamped"


def test_a_counter_counts_failures_and_starts_over_on_reset() -> None:
    """`Retries` walks its schedule one failure at a time; reset goes back to the first delay."""
    values = itertools.cycle([0.0, 0.37, 0.99, 1.0])
    retries = Retries(RetrySchedule(1.0, 30.0, jitter=True), random=lambda: next(values))
    assert retries.ceiling() == 2.0
    delays = [retries.next_delay() for _ in range(200)]
    assert delays[0] == 1.0 and 29.9 < max(delays) <= 30.0 and min(delays) >= 1.0
    assert len({round(d, 3) for d in delays}) > 4, "jittered, not a fixed ladder"
    assert retries.attempt == 200 and retries.ceiling() == 30.0
    retries.reset()
    assert retries.attempt == 0 and retries.ceiling() == 2.0
    plain = Retries(RetrySchedule(2.0, 8.0))
    assert [plain.next_delay() for _ in range(4)] == [2.0, 4.0, 8.0, 8.0]


@pytest.mark.parametrize(("first", "cap"), [(0.0, 1.0), (-1.0, 1.0), (2.0, 1.0)])
def test_a_schedule_needs_a_positive_first_delay_no_larger_than_its_cap(
    first: float, cap: float
) -> None:
    """A zero floor would hammer a refused port; a floor above the cap is a typo."""
    with pytest.raises(ValueError, match="first <= cap"):
        RetrySchedule(first, cap)


def test_the_apps_four_schedules_keep_their_delays() -> None:
    """Reconnects, re-sends, draft saves and provider probes wait as they always did."""
    from desktop.core.delivery.outbox import RESEND
    from desktop.core.disk.drafts import SAVE_RETRY
    from desktop.core.link.backoff import RECONNECT
    from desktop.gateway.providers.fallback import PROBE

    def ladder(schedule: RetrySchedule, n: int = 8) -> list[float]:
        return [schedule.delay(i, lambda: 1.0) for i in range(n)]

    assert ladder(RECONNECT) == [2, 4, 8, 16, 30, 30, 30, 30]
    assert [RECONNECT.delay(i, lambda: 0.0) for i in range(3)] == [1.0, 1.0, 1.0]
    assert ladder(RESEND) == [1, 2, 4, 8, 16, 30, 30, 30]
    assert ladder(SAVE_RETRY) == [0.5, 1, 2, 4, 8, 16, 30, 30]
    assert ladder(PROBE) == [2, 4, 8, 16, 32, 60, 60, 60]
