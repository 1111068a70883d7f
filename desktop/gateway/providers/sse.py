"""Decoding of OpenAI-style streaming chat completion events into chunks (sans I/O)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .base import Chunk, ChunkKind, ProviderError, Usage


@dataclass(slots=True)
class StreamDecoder:
    """Feed it SSE lines; it returns chunks and remembers usage and whether the stream ended."""

    provider: str
    model: str
    done: bool = False
    finished: bool = False  # a choice carried a finish_reason
    usage: Usage | None = None
    _data: list[str] = field(default_factory=list)

    def feed_line(self, line: str) -> list[Chunk]:
        """One line of the body (without its newline). A blank line ends an event."""
        if line.startswith(":"):
            return []  # SSE comment, e.g. a keep-alive ": ping"
        if line.startswith("data:"):
            self._data.append(line[5:].removeprefix(" "))
            return []
        if line.strip() or not self._data:
            return []  # other fields (event:, id:, retry:) carry nothing we use
        payload, self._data = "\n".join(self._data), []
        return self._event(payload)

    def flush(self) -> list[Chunk]:
        """The body ended: an event left without its blank line still counts."""
        return self.feed_line("") if self._data else []

    def _event(self, payload: str) -> list[Chunk]:
        if payload.strip() == "[DONE]":
            self.done = True
            return []
        try:
            event = json.loads(payload)
        except json.JSONDecodeError as exc:
            raise ProviderError(
                f"{self.provider} sent a malformed stream event", transport=True
            ) from exc
        if not isinstance(event, dict):
            return []
        if isinstance(event.get("error"), dict):
            # Upstream failure reported inside a 200 stream (proxies and routers do this).
            message = str(event["error"].get("message") or "stream error")
            raise ProviderError(f"{self.provider} failed mid-answer: {message}", transport=True)
        usage = event.get("usage")
        if isinstance(usage, dict):
            self.usage = _usage(usage, self.provider, str(event.get("model") or self.model))
        chunks: list[Chunk] = []
        for choice in event.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            if choice.get("finish_reason"):
                self.finished = True
            delta = choice.get("delta") or choice.get("message") or {}
            if not isinstance(delta, dict):
                continue
            thinking = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(thinking, str) and thinking:
                chunks.append(Chunk(ChunkKind.THINKING, thinking))
            content = delta.get("content")
            if isinstance(content, str) and content:
                chunks.append(Chunk(ChunkKind.TEXT, content))
        return chunks


def _usage(raw: dict[str, Any], provider: str, model: str) -> Usage:
    def num(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) else 0

    extra = {k: v for k, v in raw.items() if k not in ("prompt_tokens", "completion_tokens")}
    return Usage(num("prompt_tokens"), num("completion_tokens"), provider, model, extra)
