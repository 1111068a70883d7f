"""Model providers for the embedded gateway: OpenAI-compatible HTTP, fallbacks, and an offline model."""
