"""The desktop around the app: OS network and sleep notices, the tray, screen-reader
announcements, bundled resources and the crash log (heap hygiene is in desktop/common/memory,
shared with the gateway; one instance per data dir in desktop/app/single_instance, which
listens on a socket).
"""
