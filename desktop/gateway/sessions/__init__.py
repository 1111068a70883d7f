"""The gateway's sessions: their state, event logs, turns, staged attachments and the store."""
