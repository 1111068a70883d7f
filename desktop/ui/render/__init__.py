"""Text to pixels for one bubble: markdown to rich text, safe documents, bubble geometry, footers,
dates and link opening.
"""
