"""Writing a message: the composer, slash-command completion, and how an undelivered prompt
is labelled.
"""
