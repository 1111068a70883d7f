"""The composition root and the process around it: start-up (`main`, `Core`), one instance per
data dir, display checks, fatal errors, settings persistence and live application,
notifications, the self-test and bench hooks.
"""
