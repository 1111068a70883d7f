"""PySide6's import hook and module sources: not read at start-up, not kept after imports."""

from __future__ import annotations

import linecache
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType

# PySide6's table of each imported module's `__feature__` selection (shiboken's own module).
_FEATURES = "shibokensupport.feature"
# The table's value for a module that selects no feature: Qt calls from it act as they would
# from any module of an app that never imports `__feature__` (the default selection).
_NO_FEATURE = -1


class _NoFeatureScan:
    """A meta path finder, first on sys.meta_path: marks each module about to be imported as
    selecting no feature; finds nothing itself, so the usual finders import it."""

    def __init__(self) -> None:
        self._table: dict[str, int] | None = None

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        table = self._table if self._table is not None else self.table()
        if table is not None:
            table.setdefault(fullname, _NO_FEATURE)
        return None

    def table(self) -> dict[str, int] | None:
        """PySide6's table once it is imported; the modules imported before are entered then
        (later imports name them again)."""
        table = getattr(sys.modules.get(_FEATURES), "pyside_feature_dict", None)
        if not isinstance(table, dict):
            return None
        self._table = table
        for name in list(sys.modules):
            table.setdefault(name, _NO_FEATURE)
        return table


_FINDER = _NoFeatureScan()


def skip_feature_scan() -> None:
    """Keep PySide6's import hook from reading the source of every module imported after it.

    After each import PySide6 asks whether the module names PySide6 (PYSIDE-2029: for
    `from __feature__ import snake_case`), by reading and decoding its whole source file
    (inspect.getsource): ~35 ms for the ~300 modules of a start, before the window shows. No
    module of this app or its libraries selects a feature, so each module is entered in that
    table as it is imported, and the hook skips it. A module that does import `__feature__`
    still sets its own entry while it runs. Idempotent; without PySide6's table (another
    version) it changes nothing.
    """
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    _FINDER.table()


def forget_import_sources() -> None:
    """Empty linecache after a batch of imports.

    PySide6's import hook reads the source of every module imported after it (inspect.getsource,
    PYSIDE-2029: does the module use `__feature__`?) and linecache keeps each one: about 10 MB
    for this app's modules when they are imported without `skip_feature_scan`. Nothing needs
    them; a traceback reads its few lines again.
    """
    linecache.clearcache()
