"""Realistic chat content for benches: alternating user questions and markdown answers."""

from __future__ import annotations

from desktop.core.models import ChatMessage, Role

ANSWER = (
    "Here is what I found about **item {i}**:\n\n"
    "- the first point, with `inline code` and a [link](https://example.com/{i})\n"
    "- a second point that runs a little longer so the bubble wraps onto two lines\n\n"
    "```python\ndef answer_{i}(x: int) -> int:\n    return x * {i}\n```\n\n"
    "That should cover it."
)


def session(key: str, n: int) -> list[ChatMessage]:
    """`n` messages of one session, questions and answers alternating."""
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append(
                ChatMessage(f"{key}-{i}", Role.USER, f"Question {i}: how does part {i} work?")
            )
        else:
            out.append(ChatMessage(f"{key}-{i}", Role.ASSISTANT, ANSWER.format(i=i)))
    return out
