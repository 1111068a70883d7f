"""The main window and what sits around the chat: the connection area and its details, the shortcuts
table, and the backend seam (`ChatBackend` and its Qt signal bridge).
"""
