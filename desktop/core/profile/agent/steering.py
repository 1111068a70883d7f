"""Steer a running turn (`session.steer`): a typed text or a queued follow-up, sent once.

The outcomes are four and kept apart: taken (the turn reads it), refused (it stays or becomes
a queued follow-up), not served (the same, and the dialect remembers -32601 so the UI hides
Steer), and unknown (the link went before the answer): an unknown steer may have reached the
agent, so it is never sent again, neither as a steer nor as a follow-up; the user is told and
gets the text back in the composer to decide.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from desktop.common.codes import METHOD_NOT_FOUND
from desktop.common.methods import SESSION_STEER
from desktop.core.delivery.outbox import Outbox, OutboxError
from desktop.core.errors import GatewayError, NotConnectedError, RpcError
from desktop.core.link.dialect import Dialect
from desktop.core.listeners import Notify, notice
from desktop.core.models import Draft

log = logging.getLogger(__name__)

# What the composer's tooltip says where Steer is hidden.
NOT_SERVED = "This gateway cannot steer a running reply (it has no session.steer)"
TAKEN = "Steered the running reply: {text}"
REFUSED = "The reply could not take it now; it is queued as the next message"
UNKNOWN = (
    "The connection went before the gateway answered the steer; it may have reached the "
    "agent, so it was not sent again. Its text is back in the composer."
)

NO_ATTACHMENTS = "A message with attachments cannot steer a reply; it stays queued"


class SteerOutcome(enum.Enum):
    TAKEN = "taken"
    REFUSED = "refused"  # "rejected", or a gateway error before it ran: provably not taken
    NOT_SERVED = "not_served"  # -32601
    UNKNOWN = "unknown"  # sent, no answer: may have been taken


def steer_available(dialect: Dialect | None) -> tuple[bool, str]:
    """Whether to offer Steer on this connection, and the reason when not."""
    if dialect is None:
        return False, "Not connected"
    if not dialect.has(SESSION_STEER):
        return False, NOT_SERVED
    return True, ""


class Steering:
    """Sends steers for one profile and settles each one's text exactly once."""

    def __init__(
        self,
        *,
        call: Callable[[str, dict[str, Any]], Coroutine[Any, Any, Any]],
        outbox: Outbox,
        send: Callable[[str, str], None],
        notify: Notify,
        spawn: Callable[[Coroutine[Any, Any, Any]], object],
    ) -> None:
        self._call = call
        self._outbox = outbox
        self._send = send  # (key, text): queue it as a follow-up
        self._notify = notify
        self._spawn = spawn

    async def ask(self, runtime: str, text: str) -> SteerOutcome:
        """One `session.steer`; never repeated here, whatever happens to it."""
        try:
            res = await self._call(SESSION_STEER, {"session_id": runtime, "text": text})
        except NotConnectedError:
            return SteerOutcome.REFUSED  # nothing was sent
        except RpcError as exc:
            if exc.code == METHOD_NOT_FOUND:
                return SteerOutcome.NOT_SERVED
            log.info("steer refused: %s", exc.code)
            return SteerOutcome.REFUSED  # the gateway answered: it did not take it
        except GatewayError as exc:
            log.info("steer unanswered: %s", type(exc).__name__)
            return SteerOutcome.UNKNOWN
        status = res.get("status") if isinstance(res, dict) else None
        return SteerOutcome.TAKEN if status == "queued" else SteerOutcome.REFUSED

    def steer_text(self, key: str, runtime: str, text: str) -> None:
        """Steer with a text typed in the composer; refused, it goes as a queued follow-up."""
        self._spawn(self._steer_text(key, runtime, text))

    async def _steer_text(self, key: str, runtime: str, text: str) -> None:
        outcome = await self.ask(runtime, text) if runtime else SteerOutcome.REFUSED
        if outcome is SteerOutcome.TAKEN:
            notice(self._notify, key, TAKEN.format(text=_short(text)))
        elif outcome is SteerOutcome.UNKNOWN:
            self._give_back(key, text)
        else:
            notice(self._notify, key, NOT_SERVED if outcome is SteerOutcome.NOT_SERVED else REFUSED)
            self._send(key, text)

    def steer_queued(self, key: str, runtime: str, ref: str) -> bool:
        """Offer a queued follow-up to the running turn now; False when it is no longer
        queued (already on its way). While the steer is out, it and those after it wait."""
        try:
            entry = self._outbox.hold_for_steer(ref)
        except OutboxError as exc:
            notice(self._notify, key, str(exc))
            return False
        if entry.attachments:
            self._outbox.not_steered(ref)
            notice(self._notify, key, NO_ATTACHMENTS)
            return False
        self._spawn(self._steer_queued(key, runtime, ref, entry.text))
        return True

    async def _steer_queued(self, key: str, runtime: str, ref: str, text: str) -> None:
        outcome = SteerOutcome.REFUSED
        try:
            outcome = await self.ask(runtime, text) if runtime else SteerOutcome.REFUSED
        finally:
            if outcome is SteerOutcome.TAKEN or outcome is SteerOutcome.UNKNOWN:
                self._outbox.steered(ref)
            else:
                self._outbox.not_steered(ref)
        if outcome is SteerOutcome.TAKEN:
            notice(self._notify, key, TAKEN.format(text=_short(text)))
        elif outcome is SteerOutcome.UNKNOWN:
            self._give_back(key, text)
        else:
            notice(self._notify, key, NOT_SERVED if outcome is SteerOutcome.NOT_SERVED else REFUSED)

    def _give_back(self, key: str, text: str) -> None:
        draft = Draft(text, len(text), ())
        self._notify(lambda listener: listener.on_prompt_restored(key, draft, UNKNOWN))


def _short(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
