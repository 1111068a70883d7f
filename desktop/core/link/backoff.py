"""Full-jitter exponential backoff between reconnect attempts (1 s floor, 30 s cap)."""

from __future__ import annotations

import random as _random
from collections.abc import Callable


class Backoff:
    """Delays for successive retries: uniform in [base, min(cap, base * 2**attempt)].

    Full jitter spreads a fleet of clients that lost the same gateway; the floor keeps a
    refused port from being hammered, and the cap bounds how long a returning network waits.
    """

    def __init__(
        self,
        *,
        base: float = 1.0,
        cap: float = 30.0,
        random: Callable[[], float] = _random.random,
    ) -> None:
        if not 0 < base <= cap:
            raise ValueError("backoff needs 0 < base <= cap")
        self._base = base
        self._cap = cap
        self._random = random
        self._attempt = 0

    @property
    def attempt(self) -> int:
        """Failures since the last success."""
        return self._attempt

    def ceiling(self) -> float:
        """The largest delay the next call to `next_delay()` may return."""
        # Clamp the exponent so a very long outage cannot overflow the float.
        return min(self._cap, self._base * 2.0 ** min(self._attempt + 1, 32))

    def next_delay(self) -> float:
        """Count one more failure and return how long to wait before the next attempt."""
        ceiling = self.ceiling()
        self._attempt += 1
        r = min(max(self._random(), 0.0), 1.0)
        return self._base + r * (ceiling - self._base)

    def reset(self) -> None:
        """A connection succeeded: the next failure starts again from the floor."""
        self._attempt = 0
