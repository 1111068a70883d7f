"""The link to one gateway: the wire codec, the one WebSocket module, the JSON-RPC client and the
rule of its liveness (`liveness`: heartbeat and deadline), the per-profile supervisor and the
reconnect policy it follows (`backoff`), persisted epochs, and the launchers of child-process
gateways.
"""
