"""What the client core and the embedded gateway both need: clock, JSON, file writes, limits,
error codes, per-user folders, loopback hosts."""
