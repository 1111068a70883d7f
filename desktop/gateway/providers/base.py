"""The provider interface the gateway's turn worker streams from."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, runtime_checkable


class ChunkKind(Enum):
    TEXT = "text"
    THINKING = "thinking"
    NOTICE = "notice"  # e.g. "primary provider unreachable, answering with fallback X"


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str
    images: tuple[str, ...] = ()  # data: URLs for vision-capable models


@dataclass(frozen=True, slots=True)
class Chunk:
    kind: ChunkKind
    text: str
    # On a NOTICE: the answer restarts with another provider, so text and thinking streamed
    # earlier in this turn are void and should be cleared before the new answer is shown.
    restart: bool = False


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    provider: str = ""
    model: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class ProviderError(Exception):
    """A provider failed. `transport` failures (dead socket, refused, 5xx, idle timeout) may fall
    back to another provider; others (bad key, unknown model, bad request) end the turn."""

    def __init__(self, message: str, *, transport: bool, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.transport = transport
        self.status = status

    def is_retryable(self) -> bool:
        return self.transport


class Provider(Protocol):
    """Streams one completion: the iterator yields chunks, then returns; read usage after."""

    name: str

    def stream(self, messages: list[ChatMessage]) -> AsyncIterator[Chunk]: ...

    @property
    def last_usage(self) -> Usage | None: ...

    async def aclose(self) -> None: ...


# A session's model choice: (provider id, model name).
ModelPick = tuple[str, str]


@runtime_checkable
class ModelSwitch(Protocol):
    """A provider whose model a session can switch (Hermes' `model.options` / `config.set`)."""

    def catalog(self, pick: ModelPick | None) -> dict[str, Any]:
        """`model.options`' result: `{model, provider, providers: [{slug, name, models}]}`."""
        ...

    def resolve(self, value: str) -> ModelPick:
        """The pick `config.set model` names ("MODEL --provider ID" or "MODEL"); ValueError
        with the reason in words when no configured provider has it."""
        ...

    def describe(self, pick: ModelPick | None) -> tuple[str, str]:
        """(model, provider name) the session's next reply will come from."""
        ...

    def provider_for(self, pick: ModelPick | None) -> Provider:
        """What streams the session's next reply."""
        ...


@runtime_checkable
class HealthProbe(Protocol):
    """A provider that can tell, cheaply and without a completion, whether it is reachable."""

    async def probe(self) -> None:
        """Return when the provider answers at the transport level; raise ProviderError if not."""
        ...
