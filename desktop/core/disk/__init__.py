"""What is kept on this computer: the crash-safe SQLite store and its migrations, autosaved drafts,
attachments copied by content hash, and exports.
"""
