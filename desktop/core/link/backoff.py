"""The reconnect schedule: full-jitter exponential backoff between attempts (1 s floor, 30 s cap).

Full jitter spreads a fleet of clients that lost the same gateway; the floor keeps a refused
port from being hammered, and the cap bounds how long a returning network waits. The
supervisor counts failures along it (`Retries`) and resets only after a useful connection.
"""

from __future__ import annotations

from desktop.common.retry import RetrySchedule

RECONNECT = RetrySchedule(first=1.0, cap=30.0, jitter=True)
