"""User bubbles of prompts in the outbox: shown when queued, updated, then settled or removed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from desktop.core.chats.conversation import LOCAL_PREFIX, Conversation
from desktop.core.chats.index import SessionState, title_from
from desktop.core.delivery.outbox import HELD, OutboxError, copy_at
from desktop.core.disk.store import OutboxEntry
from desktop.core.errors import StorageError
from desktop.core.models import ChatMessage, DeliveryState, Draft, Role, SessionSummary


def bubble_id(submission_ref: str) -> str:
    """The message id of the bubble showing the outbox entry `submission_ref`."""
    return f"{LOCAL_PREFIX}{submission_ref}"


def ref_of(message_id: str) -> str | None:
    """The outbox entry a bubble shows, or None for any other message."""
    return message_id[len(LOCAL_PREFIX) :] if message_id.startswith(LOCAL_PREFIX) else None


def echoed(messages: list[ChatMessage], bubble: ChatMessage, history_mark: int) -> bool:
    """True when a snapshot already holds the gateway's copy of `bubble`'s prompt."""
    return echo_of(messages, bubble, history_mark) is not None


def echo_of(
    messages: list[ChatMessage], bubble: ChatMessage, history_mark: int
) -> ChatMessage | None:
    """The gateway's copy of `bubble`'s prompt when a snapshot already holds it: its user rows
    (bubbles of this side aside) judged by the outbox's rule, `copy_at`."""
    rows = (
        (i, m.text)
        for i, m in enumerate(messages)
        if m.role is Role.USER and not m.id.startswith(LOCAL_PREFIX)
    )
    at = copy_at(rows, bubble.text, history_mark)
    return None if at is None else messages[at]


class BubbleChats(Protocol):
    """What the bubbles need of the profile's conversations (the feed): the one path by
    which the window hears of a bubble."""

    def get(self, key: str) -> Conversation | None: ...
    def ensure(self, key: str) -> Conversation: ...
    def remove_message(self, key: str, message_id: str) -> None: ...
    def message_changed(self, key: str, message: ChatMessage) -> None: ...


class BubbleList(Protocol):
    """What the bubbles need of the session list: a row for a prompt's chat, and its cache."""

    def get(self, key: str) -> SessionState | None: ...
    def add(self, summary: SessionSummary) -> SessionState: ...
    def cache_conversation(self, key: str, conv: Conversation) -> None: ...


class PromptBubbles:
    """Owns the bubbles that exist only on this side: queued, failed or unconfirmed prompts.

    A bubble enters its conversation when the prompt is queued, so the reply always lands
    below it, and leaves when the gateway's own copy of the prompt is on screen or the prompt
    went back to the composer.
    """

    def __init__(
        self,
        *,
        chats: BubbleChats,
        listing: BubbleList,
        cancel: Callable[[str], object],
        resolve: Callable[[str], str],
        tell: Callable[[str, str], None],
    ) -> None:
        self._chats = chats
        self._listing = listing
        self._cancel = cancel  # takes a queued prompt out of the outbox (by its ref)
        self._resolve = resolve  # a temporary key the gateway created -> its real key
        self._tell = tell  # a notice about a session
        self._local: dict[str, dict[str, ChatMessage]] = {}  # session key -> id -> bubble

    # -- outbox news -----------------------------------------------------------------------

    def show(self, entry: OutboxEntry) -> None:
        """Put a queued prompt's bubble in its conversation, or update its delivery state."""
        key = self._resolve(entry.session_key)
        if self._listing.get(key) is None:
            self._listing.add(SessionSummary(key=key, title=title_from(entry.text)))
        local = self._local.setdefault(key, {})
        message_id = bubble_id(entry.submission_ref)
        bubble = local.get(message_id)
        is_new = bubble is None
        if bubble is None:
            bubble = ChatMessage(
                id=message_id,
                role=Role.USER,
                text=entry.text,
                created_at=entry.created_at,
                attachments=entry.attachments,
            )
            local[message_id] = bubble
        bubble.text = entry.text
        bubble.delivery = entry.state
        # The line under the bubble: why it failed, or that it waits for the running reply.
        held = entry.state is DeliveryState.PENDING and entry.error == HELD
        bubble.delivery_error = entry.error if entry.state is DeliveryState.FAILED or held else ""
        conv = self._chats.ensure(key)
        if is_new:
            conv.append_local(bubble)
        else:
            self._chats.message_changed(key, bubble)

    def on_outbox_state(self, entry: OutboxEntry) -> None:
        """An entry of this profile changed state (the outbox tells each profile its own)."""
        self.show(entry)

    def on_outbox_removed(self, entry: OutboxEntry) -> None:
        key = self._resolve(entry.session_key)
        message_id = bubble_id(entry.submission_ref)
        bubble = self._local.get(key, {}).pop(message_id, None)
        if bubble is None:
            return
        if entry.state is DeliveryState.FAILED:
            # A failed entry leaves the outbox only once it is back in the composer, with its
            # own Retry: a second copy on screen could be sent twice.
            self._chats.remove_message(key, message_id)
            return
        conv = self._chats.get(key)
        if entry.state is not DeliveryState.CONFIRMED or conv is None:
            self._chats.remove_message(key, message_id)
            return
        copy = echo_of(conv.messages, bubble, entry.history_mark)
        if copy is not None:
            # A snapshot already brought the gateway's copy of this prompt: keep only that,
            # with the files it was sent with (the gateway's row names none).
            self._chats.remove_message(key, message_id)
            if bubble.attachments and copy.attachments != bubble.attachments:
                copy.attachments = bubble.attachments
                self._chats.message_changed(key, copy)
                self._listing.cache_conversation(key, conv)
            return
        # Kept: it is this prompt's user row now. A gateway that catches up by replay (0.22,
        # 0.21.5) sends no history after a reconnect, so no gateway copy replaces it.
        bubble.delivery = DeliveryState.CONFIRMED
        bubble.delivery_error = ""
        self._chats.message_changed(key, bubble)
        # Cached now: the chat is written at snapshots and turn ends, and a prompt settled
        # after a cut link is confirmed after both (its turn ended while it was unconfirmed,
        # which is never cached); offline, the chat would show that reply without its prompt.
        self._listing.cache_conversation(key, conv)

    # -- user intents ----------------------------------------------------------------------

    def take(self, message_id: str) -> tuple[str, ChatMessage] | None:
        """Remove a bubble from the screen and return it with its session key."""
        found = self.find(message_id)
        if found is not None:
            self._drop(found[0], message_id)
        return found

    def discard(self, message_id: str) -> None:
        """Drop an unsent prompt: out of the outbox if still queued, off the screen."""
        found = self.find(message_id)
        if found is None:
            return
        ref = ref_of(message_id)
        if ref:
            try:
                self._cancel(ref)
            except OutboxError:
                pass  # already on its way: the outbox settles it, the bubble goes now
            except StorageError as exc:
                # Still queued on disk: hiding its bubble would hide a prompt about to be sent.
                self._tell(found[0], f"could not discard the message: {exc}")
                return
        self._drop(found[0], message_id)

    def edit_unsent(self, message_id: str) -> Draft | None:
        """Take back a prompt for the composer; None when it can no longer be stopped."""
        found = self.find(message_id)
        if found is None:
            return None
        key, bubble = found
        ref = ref_of(message_id)
        if ref and bubble.delivery is DeliveryState.PENDING:
            try:
                self._cancel(ref)
            except (OutboxError, StorageError) as exc:
                self._tell(key, str(exc))
                return None
        self._drop(key, message_id)
        return Draft(bubble.text, len(bubble.text), bubble.attachments)

    # -- session keys ----------------------------------------------------------------------

    def rekey(self, temp_key: str, real_key: str) -> None:
        """The gateway created `temp_key` as `real_key`: its bubbles move along."""
        self._local[real_key] = self._local.pop(temp_key, {})

    def forget(self, key: str) -> None:
        """The session is deleted; its bubbles go with it."""
        self._local.pop(key, None)

    def find(self, message_id: str) -> tuple[str, ChatMessage] | None:
        for key, local in self._local.items():
            bubble = local.get(message_id)
            if bubble is not None:
                return key, bubble
        return None

    def _drop(self, key: str, message_id: str) -> None:
        self._local.get(key, {}).pop(message_id, None)
        self._chats.remove_message(key, message_id)
