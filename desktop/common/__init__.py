"""What the client core and the embedded gateway share: clock, JSON, files, limits, RPC names."""
