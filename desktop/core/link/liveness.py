"""Liveness of one gateway link: when a silent link counts as dead. The one home of that rule.

A link lives while frames arrive: each inbound frame, and each heartbeat's answer, moves its
deadline to `HEARTBEAT_DEADLINE` after it. A heartbeat every `HEARTBEAT_INTERVAL` (`gateway.ping`
where the dialect has it, else a WebSocket ping) makes a healthy idle link answer in time. At
the deadline, bytes beyond the last whole frame still count as progress (a large frame on a
slow link: dropping it would fetch the same frame again after every reconnect, forever); with
none, the link is dead (`DEADLINE_PASSED`) and the supervisor reconnects.

`JsonRpcGatewayClient` (client.py) runs the timers and sends the pings; what it does at each
deadline is `verdict`'s. (Not to be confused with the embedded gateway's TCP keepalive towards
its model providers, `desktop/gateway/providers/keepalive.py`.)
"""

from __future__ import annotations

from enum import Enum

__all__ = ["HEARTBEAT_DEADLINE", "HEARTBEAT_INTERVAL", "Verdict", "deadline_base", "verdict"]

HEARTBEAT_INTERVAL = 15.0  # seconds between heartbeats of an otherwise quiet link
HEARTBEAT_DEADLINE = 45.0  # seconds of silence after which the link is dead


class Verdict(Enum):
    ALIVE = "alive"  # something arrived since the timer was set: wait for the new deadline
    PROGRESS = "progress"  # a frame is still arriving: its new bytes move the deadline
    DEAD = "dead"  # nothing for a whole deadline: the link fails


def deadline_base(last_inbound_at: float | None, progress_at: float | None) -> float:
    """The time the deadline runs from: the last inbound frame or partial-frame progress."""
    last = last_inbound_at if last_inbound_at is not None else 0.0
    return last if progress_at is None else max(last, progress_at)


def verdict(*, now: float, base: float, deadline: float, received: int, seen: int) -> Verdict:
    """What the deadline timer finds at `now`: `base` from `deadline_base`, `received` the
    link's bytes so far, `seen` those of its last whole frame (or of the last progress)."""
    if now < base + deadline:
        return Verdict.ALIVE
    # Whole frames never count here (they moved the deadline when they came), so a silent
    # drop is caught at the deadline itself.
    return Verdict.PROGRESS if received > seen else Verdict.DEAD
