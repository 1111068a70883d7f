"""Where file dialogs open: the folder last used for the same purpose, else the user's home.

Never the program's working directory (where a launcher started it, often `/` or the source).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings


class Folders:
    """Remembers, per purpose ("attach", "export"), the folder a file dialog last used."""

    def __init__(self, settings: QSettings | None = None) -> None:
        self._settings = settings
        self._seen: dict[str, str] = {}

    def start(self, purpose: str) -> str:
        """The folder to open a `purpose` dialog in: the last one used there, if it still
        exists, else the home folder."""
        last = self._seen.get(purpose)
        if last is None and self._settings is not None:
            last = str(self._settings.value(f"folders/{purpose}", "") or "")
        if last and Path(last).is_dir():
            return last
        return str(Path.home())

    def remember(self, purpose: str, path: str) -> None:
        """A dialog chose `path` (a file): its folder is where the next one opens."""
        folder = str(Path(path).parent)
        self._seen[purpose] = folder
        if self._settings is not None:
            self._settings.setValue(f"folders/{purpose}", folder)
