"""Model providers for the embedded gateway: OpenAI-compatible, fallbacks, offline model."""
