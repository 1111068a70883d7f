"""One profile as the UI sees it: the controller behind the window's `ChatBackend`, the parts it
owns (each holding narrow ports, never another part; `feed` is the one path by which the window
hears of a chat), and `assembly`, the one place a profile is wired.
"""
