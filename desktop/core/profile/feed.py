"""The conversations one profile shows, and the listener calls their changes turn into."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from desktop.common.clock import Clock
from desktop.core.chats.conversation import Conversation
from desktop.core.chats.index import SessionIndex
from desktop.core.chats.router import HISTORY_HELD, HISTORY_WINDOW, SessionRouter
from desktop.core.keys import is_temp_key
from desktop.core.listeners import Notify
from desktop.core.models import ApprovalRequest, ChatMessage, Role, SessionInfo


class ConversationFeed:
    """Finds each session's conversation and forwards its changes to listeners.

    Conversations of temporary sessions live here until the gateway creates the session; all
    others belong to the router. A streaming delta is sent as one changed message, anything
    that changes the list's shape as the whole list.
    """

    def __init__(
        self,
        router: SessionRouter,
        index: SessionIndex,
        clock: Clock,
        notify: Notify,
        *,
        on_request_shown: Callable[[str, ApprovalRequest], None] | None = None,
    ) -> None:
        self._router = router
        self._on_request_shown = on_request_shown
        self._index = index
        self._clock = clock
        self._notify = notify
        self._temp: dict[str, Conversation] = {}
        self._unsubs: dict[str, Callable[[], None]] = {}
        self._shown: dict[str, int] = {}  # session key -> bubbles last sent whole to listeners
        self._waiting: dict[str, int] = {}  # session key -> replies said to wait at its live end
        self._requests: dict[str, set[str]] = {}  # session key -> request ids shown as cards
        self._infos: dict[str, SessionInfo] = {}  # session key -> info last sent
        # Sessions whose last list call was the whole list as it still is (nothing sent since).
        self._whole_shown: set[str] = set()

    def get(self, key: str) -> Conversation | None:
        return self._temp.get(key) or self._router.conversation(key)

    def runtime_hint(self, key: str) -> str | None:
        """The best runtime id known for `key`: the router's, else the stored one."""
        return self._router.runtime_id(key) or self._index.runtime_id(key)

    def start_temp(self, key: str) -> Conversation:
        """A conversation for a session the gateway does not have yet."""
        self._temp[key] = conv = Conversation(key, now=self._clock.wall)
        self.watch(key, conv)
        return conv

    def adopt(self, temp_key: str, real_key: str) -> None:
        """The gateway created `temp_key` as `real_key`: its row and what was shown under the
        temporary key move to the router's conversation, and listeners hear of the new key."""
        temp_conv = self._temp.pop(temp_key, None)
        self._index.adopt(temp_key, real_key, self._router.runtime_id(real_key))
        conv = self._router.conversation(real_key)
        if conv is not None:
            if temp_conv is not None:
                for message in temp_conv.messages:
                    conv.append_local(message)
            self.watch(real_key, conv)
        self._notify(lambda listener: listener.on_session_key_changed(temp_key, real_key))
        self._index.emit()

    def route(self, key: str) -> Conversation:
        """Have the router follow `key`, watched from now on."""
        conv = self._router.route(key, self.runtime_hint(key))
        if not conv.messages:
            # What was shown before a restart, its newest page as the gateway's first (older
            # pages read as they are wanted): the snapshot rebuild keeps their times, tool
            # output and usage, which the gateway's rows do not carry.
            conv.seed_cached(partial(self._index.cached_messages, key), HISTORY_WINDOW)
        self.watch(key, conv)
        return conv

    def ensure(self, key: str) -> Conversation:
        """The conversation of `key`, made (temporary or routed) if there is none yet."""
        conv = self.get(key)
        if conv is None:
            return self.start_temp(key) if is_temp_key(key) else self.route(key)
        self.watch(key, conv)
        return conv

    def watch(self, key: str, conv: Conversation) -> None:
        if key in self._unsubs:
            return
        self._unsubs[key] = conv.add_listener(self._on_conversation_changed)

    def forget(self, key: str) -> None:
        """The session is deleted: stop routing and watching it."""
        self._router.unroute(key)
        unsub = self._unsubs.pop(key, None)
        if unsub:
            unsub()
        self._temp.pop(key, None)

    def publish(self, key: str, conv: Conversation) -> None:
        """Send the whole message list of `key` to listeners."""
        self.watch(key, conv)
        messages = list(conv.shown)
        self._whole_shown.add(key)
        self._index.attach_sent(key, messages)
        self._notify(lambda listener: listener.on_session_messages(key, messages))

    def on_router_snapshot(self, key: str, snapshot: dict[str, Any]) -> None:
        """The router took a snapshot of `key`: the chat is cached as it now is, and the window
        gets its whole list once per snapshot.

        Watched, the load's own change already sent it (unless the view shows a window far
        up); a conversation not watched yet (just created) is watched and sent from here.
        """
        self._index.cache_snapshot(key, snapshot)
        conv = self._router.conversation(key)
        if conv is None:
            return
        if key not in self._unsubs or key not in self._whole_shown:
            self.publish(key, conv)
        self._index.cache_conversation(key, conv)

    def prepended(self, key: str, count: int) -> None:
        """`count` older messages were put before the loaded ones: send just those; then the
        newest ones past the bound are dropped (the user reads far up)."""
        conv = self.get(key)
        if conv is None or count <= 0:
            return
        self._whole_shown.discard(key)
        self._shown[key] = len(conv.messages)
        older = conv.messages[:count]
        self._index.attach_sent(key, older)
        self._notify(lambda listener: listener.on_messages_prepended(key, older))
        was_detached = conv.detached
        dropped = conv.drop_newest(HISTORY_HELD, HISTORY_WINDOW)
        if dropped:
            if not was_detached:
                self._waiting.pop(key, None)  # a new stay far up: nothing counted yet
            self._notify(lambda listener: listener.on_messages_dropped(key, dropped, True))

    def appended(self, key: str, count: int) -> None:
        """`count` newer messages were put after the window (`load_newer`): send just those;
        then the oldest ones past the bound are dropped."""
        conv = self.get(key)
        if conv is None or count <= 0:
            return
        self._whole_shown.discard(key)
        newer = conv.shown[-count:]
        self._index.attach_sent(key, newer)
        self._notify(lambda listener: listener.on_messages_appended(key, newer))
        if not conv.detached:
            # The page reached the live end: the view holds the newest messages again, and
            # the replies counted while they were hidden are among them.
            self._waiting.pop(key, None)
            self._notify(lambda listener: listener.on_live_end_joined(key))
        dropped = conv.drop_oldest(HISTORY_HELD)
        if dropped:
            self._notify(lambda listener: listener.on_messages_dropped(key, dropped, False))
        # What the view holds now: counted after the drop, or the next delta of a reply at the
        # joined live end would find a stale count and send the whole list again.
        self._shown[key] = len(conv.messages)

    def remove_message(self, key: str, message_id: str) -> None:
        self._whole_shown.discard(key)
        conv = self.get(key)
        if conv is not None:
            conv.messages[:] = [m for m in conv.messages if m.id != message_id]
            self._shown[key] = len(conv.messages)
        self._notify(lambda listener: listener.on_message_removed(key, message_id))

    def close(self) -> None:
        for key in self._unsubs:
            conv = self.get(key)
            if conv is not None:
                self._index.keep_streaming(conv, now=True)  # the app quits mid-reply
        for unsub in self._unsubs.values():
            unsub()

    def _on_conversation_changed(self, conv: Conversation) -> None:
        key = conv.key
        # The session's info, status or usage changed, no bubble: nothing goes to the view, so
        # the whole list it was last sent is still the list (a snapshot then sends none again).
        no_bubble = conv.changed_only == () and self._shown.get(key) == len(conv.messages)
        if not no_bubble:
            self._whole_shown.discard(key)
        if conv.text_grew:
            # A delta of a running turn (thousands a second over many chats): its list row,
            # requests and info are as they were; only the growing reply is kept.
            self._index.keep_streaming(conv)
        else:
            self._index.follow(conv)
            self._sync_requests(key, conv)
            info = conv.session_info()
            if self._infos.get(key) != info:
                self._infos[key] = info
                self._notify(lambda listener: listener.on_session_info(key, info))
        if conv.detached:
            # The view shows a window far up: the live end shows when it is reached; what
            # came there meanwhile is counted (the view's jump button says how many replies).
            waiting = conv.newer_replies
            if waiting != self._waiting.get(key, 0):
                self._waiting[key] = waiting
                self._notify(lambda listener: listener.on_newer_waiting(key, waiting))
            return
        self._waiting.pop(key, None)
        messages = conv.messages
        streaming = conv.streaming_message
        shown = self._shown.get(key)
        if no_bubble:
            return
        if streaming is not None and shown == len(messages):
            self.message_changed(key, streaming)
            return
        changed = _changed_in_place(messages, shown, conv.changed_only)
        if changed is not None:
            # A reply started or completed: only its bubbles changed, the rest stays as shown
            # (re-sending the whole list would lay out every bubble again mid-stream).
            self._shown[key] = len(messages)
            if any(m.role is Role.ASSISTANT for m in changed):
                self._index.attach_versions(key, messages)  # a new reply to a prompt resent
            for msg in changed:
                self.message_changed(key, msg)
        else:
            self._shown[key] = len(messages)
            whole = list(messages)
            self._whole_shown.add(key)
            # A snapshot's rows name no attachment: the record kept here puts them back.
            self._index.attach_sent(key, whole)
            self._notify(lambda listener: listener.on_session_messages(key, whole))

    def asking(self) -> set[str]:
        """The sessions whose requests are shown as cards (a question waiting for the user)."""
        return {key for key, shown in self._requests.items() if shown}

    def _sync_requests(self, key: str, conv: Conversation) -> None:
        """Cards follow `conv.pending`: each request shown once, removed when it is gone."""
        shown = self._requests.setdefault(key, set())
        for request_id in [r for r in shown if r not in conv.pending]:
            shown.discard(request_id)
            self._request_closed(key, request_id)
        for request_id, request in list(conv.pending.items()):
            if request_id not in shown:
                shown.add(request_id)
                self._request_shown(key, request)

    def message_changed(self, key: str, message: ChatMessage) -> None:
        """One message of `key` changed in place (a delta, its delivery state, its files).
        Called from loops too, which make no lambdas of their own (ruff B023)."""
        self._notify(lambda listener: listener.on_message_changed(key, message))

    # Called from loops, which make no lambdas of their own (ruff B023 cannot tell that
    # notify calls them at once).
    def _request_closed(self, key: str, request_id: str) -> None:
        self._notify(lambda listener: listener.on_approval_closed(key, request_id))

    def _request_shown(self, key: str, request: ApprovalRequest) -> None:
        self._notify(lambda listener: listener.on_approval_request(key, request))
        if self._on_request_shown is not None:
            self._on_request_shown(key, request)


def _changed_in_place(
    messages: list[ChatMessage], shown: int | None, only: tuple[ChatMessage, ...] | None
) -> list[ChatMessage] | None:
    """The messages to send one by one when a change touched just `only`, those of them new
    at the end of the list; None when the whole list must be sent."""
    if only is None or shown is None or shown > len(messages):
        return None
    added = messages[shown:]
    if not all(any(m is o for o in only) for m in added):
        return None
    kept = [m for m in only if not any(m is a for a in added)]
    return kept + added
