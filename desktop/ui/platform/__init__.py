"""The desktop around the app: one instance per data dir, OS network and sleep notices, the tray,
screen-reader announcements, bundled resources, the crash log and heap hygiene.
"""
