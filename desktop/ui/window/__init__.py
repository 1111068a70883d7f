"""The main window, which only lays out and wires: the sidebar, the chat pane (header with the
connection area, find bar, requests, composer), each profile's bridge and view (a profile's events
reach the widgets only while it is shown), what the user asks of the open chat, chat admin and the
window's shortcuts.
"""
