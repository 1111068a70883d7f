"""What any part of the gateway may send: JSON-RPC faults, frame-size limits, encodable text."""
