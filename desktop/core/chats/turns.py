"""Turns in a shown message list: the prompt a reply answered, and what a finished reply said."""

from __future__ import annotations

from collections.abc import Sequence

from desktop.core.models import ChatMessage, Role, SessionSummary

FINISHED_TITLE = "Reply finished"


def prompt_before(messages: Sequence[ChatMessage], message_id: str) -> ChatMessage | None:
    """The user prompt that `message_id` answered: the nearest user message above it.

    None when the message is not in `messages` or no user message precedes it.
    """
    for row in range(len(messages) - 1, -1, -1):
        if messages[row].id == message_id:
            for above in range(row - 1, -1, -1):
                if messages[above].role is Role.USER:
                    return messages[above]
            return None
    return None


def finished_reply(
    summary: SessionSummary | None, shown: Sequence[ChatMessage] | None
) -> tuple[str, str]:
    """Title and text to announce for a reply that finished in a session.

    The title is the chat's; the text is the newest reply of `shown` (the messages on screen,
    when the session is the one being read), else the session list's preview.
    """
    title = summary.title if summary and summary.title else FINISHED_TITLE
    text = summary.preview if summary else ""
    for msg in reversed(shown or ()):
        if msg.role is Role.ASSISTANT:
            return title, msg.text
    return title, text
