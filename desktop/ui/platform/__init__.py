"""The desktop around the app: one instance per data dir, OS network and sleep notices, the tray,
screen-reader announcements, bundled resources and the crash log (heap hygiene is in
desktop/common/memory, shared with the gateway).
"""
