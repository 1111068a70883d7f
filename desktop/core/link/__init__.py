"""The link to one gateway: the wire codec, the one WebSocket module, the JSON-RPC client with its
liveness (heartbeat and deadline), the per-profile supervisor with its backoff and persisted epochs,
and the launchers of child-process gateways.
"""
