"""The embedded gateway: a Hermes-compatible JSON-RPC server and its model providers (no Qt)."""
