"""A Jepsen-style history of submits and sockets, and the checker that judges a whole run."""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum


class Outcome(Enum):
    CONFIRMED = "confirmed"  # the gateway has it
    RESTORED = "restored"  # back in the composer with a retryable error
    FAILED = "failed"  # failed and NOT given back: a lost prompt


@dataclass(slots=True)
class SubmitOp:
    """One user submit: its invoke and (once known) its outcome."""

    ref: str
    text: str
    session_key: str
    epoch: int
    generation: int
    invoked_at: float
    attachments: tuple[str, ...] = ()
    outcome: Outcome | None = None
    outcome_at: float | None = None
    outcome_epoch: int | None = None
    error: str = ""
    ambiguous: bool = False  # went UNCONFIRMED at some point


@dataclass(slots=True)
class SocketLedger:
    """Open-minus-closed transports per profile, and the highest count ever seen."""

    live: dict[str, int] = field(default_factory=lambda: collections.defaultdict(int))
    max_live: dict[str, int] = field(default_factory=lambda: collections.defaultdict(int))
    opened: dict[str, int] = field(default_factory=lambda: collections.defaultdict(int))

    def open(self, profile: str) -> None:
        self.live[profile] += 1
        self.opened[profile] += 1
        self.max_live[profile] = max(self.max_live[profile], self.live[profile])

    def close(self, profile: str) -> None:
        self.live[profile] -= 1


class History:
    """Everything a run did that the checker judges; record from listeners, check at the end."""

    def __init__(self) -> None:
        self.ops: dict[str, SubmitOp] = {}
        # Per submission_ref (or prompt text where the gateway takes no ref), what the client
        # wrote and was answered, in order: "send", "ok" (accepted), "error" (refused).
        self.wire: dict[str, list[str]] = collections.defaultdict(list)
        self.sockets = SocketLedger()
        self.epochs: list[int] = []  # every epoch a CONNECTING status announced, in order
        self.drafts_saved: dict[str, str] = {}
        self.drafts_found: dict[str, str] = {}

    def invoke(
        self,
        ref: str,
        text: str,
        session_key: str,
        *,
        epoch: int,
        generation: int,
        attachments: Iterable[str] = (),
    ) -> None:
        self.ops[ref] = SubmitOp(
            ref, text, session_key, epoch, generation, time.monotonic(), tuple(attachments)
        )

    def ambiguous(self, ref: str) -> None:
        if ref in self.ops:
            self.ops[ref].ambiguous = True

    def complete(self, ref: str, outcome: Outcome, *, epoch: int, error: str = "") -> None:
        op = self.ops.get(ref)
        if op is None or op.outcome is Outcome.CONFIRMED:
            return
        op.outcome = outcome
        op.outcome_at = time.monotonic()
        op.outcome_epoch = epoch
        op.error = error

    def epoch_started(self, epoch: int) -> None:
        self.epochs.append(epoch)

    def wire_event(self, key: str, what: str) -> None:
        """The client wrote a prompt.submit for `key` ("send") or got its answer ("ok"/"error")."""
        self.wire[key].append(what)

    def sends(self, op: SubmitOp) -> int:
        return self._wire_of(op).count("send")

    def _wire_of(self, op: SubmitOp) -> list[str]:
        return self.wire.get(op.ref) or self.wire.get(op.text) or []

    # -- the checker ---------------------------------------------------------------------

    def check(
        self,
        served: Mapping[str, int],
        *,
        composer: Callable[[str], str] = lambda key: "",
        dedupe: bool = True,
        max_live_sockets: int = 1,
    ) -> list[str]:
        """All violations of the run's invariants (empty when the run was correct).

        `served` counts, per prompt text, how many times the gateway ran it (its own records);
        `composer(session_key)` is the text the user sees in that session's composer. The
        client's own sends are judged too, since a de-duplicating gateway hides a resend: a
        prompt written again after it was accepted is a violation, and so is one written again
        while its outcome was unknown when the gateway does not de-duplicate (`dedupe`).
        """
        problems: list[str] = []
        for op in self.ops.values():
            problems.extend(self._wire_problems(op, dedupe))
            runs = served.get(op.text, 0)
            if runs > 1:
                problems.append(f"duplicate: {op.ref} ran {runs} times")
            if op.outcome is None:
                problems.append(f"unresolved: {op.ref} has no outcome (ambiguous={op.ambiguous})")
            elif op.outcome is Outcome.CONFIRMED and runs != 1:
                problems.append(f"phantom: {op.ref} confirmed but ran {runs} times")
            elif op.outcome is Outcome.RESTORED:
                if runs:
                    problems.append(f"restored but ran: {op.ref} ({runs})")
                if op.text not in composer(op.session_key):
                    problems.append(f"lost: {op.ref} restored but not in the composer")
            elif op.outcome is Outcome.FAILED:
                problems.append(f"lost: {op.ref} failed without going back to the composer")
        for key, text in self.drafts_saved.items():
            if self.drafts_found.get(key) != text:
                problems.append(f"lost draft: {key}")
        for profile, peak in self.sockets.max_live.items():
            if peak > max_live_sockets:
                problems.append(f"{profile}: {peak} live sockets at once")
        if any(b <= a for a, b in zip(self.epochs, self.epochs[1:], strict=False)):
            problems.append(f"epochs not strictly increasing: {self.epochs}")
        return problems

    def _wire_problems(self, op: SubmitOp, dedupe: bool) -> list[str]:
        problems: list[str] = []
        answered = True  # no send yet
        accepted = False
        for what in self._wire_of(op):
            if what == "send":
                if accepted:
                    problems.append(f"resent: {op.ref} written again after it was accepted")
                elif not answered and not dedupe:
                    problems.append(f"resent: {op.ref} written again while its outcome was unknown")
                answered = False
            else:
                answered = True
                accepted = accepted or what == "ok"
        return problems

    def counts(self) -> collections.Counter[str]:
        return collections.Counter(
            op.outcome.value if op.outcome else "unresolved" for op in self.ops.values()
        )
