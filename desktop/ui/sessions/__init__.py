"""Finding a chat: the session list with its filter, and the Ctrl+K switcher."""
