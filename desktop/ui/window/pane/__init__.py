"""The open chat's pane: its header (title, model switch, connection, context), the approvals
panel, the status line and passing messages (toasts), the connection details dialog, and the pane
that stacks them around the chat view and the composer. The window fills them; they emit what the
user asks for."""
