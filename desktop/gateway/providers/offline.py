"""The built-in offline model: a clearly labelled, useful streamed reply when no provider is set."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

from desktop.common.clock import AsyncioClock, Clock

from .base import ChatMessage, Chunk, ChunkKind, Usage

OFFLINE_NAME = "offline"
_WORD = re.compile(r"\S+\s*|\s+")


class OfflineProvider:
    """Streams a canned markdown answer word by word at about 50 chunks a second.

    It names itself as the offline built-in model, explains how to add a real provider, and
    echoes the question so the user can see their prompt arrived. `chunk_interval=0` for tests.
    """

    name = OFFLINE_NAME

    def __init__(
        self,
        config_path: Path | None = None,
        *,
        chunk_interval: float = 0.02,
        clock: Clock | None = None,
    ) -> None:
        self.config_path = config_path
        self.chunk_interval = chunk_interval
        self._clock: Clock = clock or AsyncioClock()
        self._last_usage: Usage | None = None

    @property
    def last_usage(self) -> Usage | None:
        return self._last_usage

    def reply_for(self, messages: list[ChatMessage]) -> str:
        prompt = next((m.content for m in reversed(messages) if m.role == "user"), "").strip()
        asked = " ".join(prompt.split())
        if len(asked) > 120:
            asked = asked[:117] + "..."
        where = f"`{self.config_path}`" if self.config_path else "`providers.json`"
        lines = [
            "**Offline built-in model** - no model provider is configured, so this answer "
            "comes from the app itself, not from an AI model.",
            "",
            f"You asked: *{asked}*" if asked else "You sent an empty message.",
            "",
            "To get real answers, add a provider:",
            "",
            "1. Open **Settings → Providers** and choose **Add provider**.",
            "2. Enter a base URL (any OpenAI-compatible API, e.g. `https://api.openai.com/v1` "
            "or a local server such as `http://127.0.0.1:11434/v1`), a model name and an API key.",
            f"3. Or edit {where}; the first provider is the primary, the rest are fallbacks. "
            "API keys are kept in the system keyring, never in that file.",
            "",
            "Meanwhile the app still works: sessions, drafts and attachments are saved, and "
            "replies render markdown with highlighted code, like this:",
            "",
            "```python",
            "def greet(name: str) -> str:",
            '    return f"Hello, {name}!"',
            "```",
            "",
            "- Fallback providers take over when the primary is unreachable.",
            "- Drafts are never lost, even if the connection drops.",
        ]
        return "\n".join(lines) + "\n"

    async def stream(self, messages: list[ChatMessage]) -> AsyncIterator[Chunk]:
        self._last_usage = None
        text = self.reply_for(messages)
        for piece in _WORD.findall(text):
            yield Chunk(ChunkKind.TEXT, piece)
            if self.chunk_interval > 0:
                await self._clock.sleep(self.chunk_interval)
        prompt_chars = sum(len(m.content) for m in messages)
        self._last_usage = Usage(
            prompt_tokens=prompt_chars // 4,
            completion_tokens=len(text) // 4,
            provider=OFFLINE_NAME,
            model="built-in",
        )

    async def aclose(self) -> None:
        return None
