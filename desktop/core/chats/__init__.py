"""Sessions on the gateway and what the user reads of them: the session router (activation after
every reconnect, replay), each session's conversation reducer, the requests the agent blocks on,
and one profile's session list with its local message cache.
"""
