"""Base URLs of common OpenAI-compatible providers, offered when a provider is added."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ProviderPreset:
    name: str
    base_url: str
    needs_key: bool  # local servers take none
    hint: str  # shown under the form: where the key comes from, what must be running


PRESETS: tuple[ProviderPreset, ...] = (
    ProviderPreset(
        "OpenAI", "https://api.openai.com/v1", True, "Key from platform.openai.com/api-keys"
    ),
    ProviderPreset(
        "OpenRouter", "https://openrouter.ai/api/v1", True, "Key from openrouter.ai/keys"
    ),
    ProviderPreset(
        "Nous Portal",
        "https://inference-api.nousresearch.com/v1",
        True,
        "Key from portal.nousresearch.com",
    ),
    ProviderPreset(
        "Ollama (this computer)",
        "http://127.0.0.1:11434/v1",
        False,
        "Needs `ollama serve` running; no key",
    ),
    ProviderPreset(
        "LM Studio (this computer)",
        "http://127.0.0.1:1234/v1",
        False,
        "Needs LM Studio's local server started; no key",
    ),
    ProviderPreset(
        "llama.cpp server (this computer)",
        "http://127.0.0.1:8080/v1",
        False,
        "Needs `llama-server` running; no key",
    ),
)


def preset_for(base_url: str) -> ProviderPreset | None:
    """The preset a base URL came from, if any (to show its hint again)."""
    wanted = base_url.rstrip("/")
    return next((p for p in PRESETS if p.base_url == wanted), None)
