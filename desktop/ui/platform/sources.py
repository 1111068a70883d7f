"""Drop the module sources PySide6's import hook leaves in linecache (megabytes, never used)."""

from __future__ import annotations

import linecache


def forget_import_sources() -> None:
    """Empty linecache after a batch of imports.

    PySide6's import hook reads the source of every module imported after it (inspect.getsource,
    PYSIDE-2029: does the module use `__feature__`?) and linecache keeps each one: about 10 MB
    for this app's modules. Nothing needs them; a traceback reads its few lines again.
    """
    linecache.clearcache()
