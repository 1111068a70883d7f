"""Drops shared libraries that only the Qt plugins and modules we removed needed."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import PurePosixPath

Entry = tuple[str, str, str]  # PyInstaller TOC row: (dest in bundle, source path, typecode)
ImportsOf = Callable[[str], Iterable[str]]  # source path -> names of the libraries it loads


def is_root(entry: Entry) -> bool:
    """Python extension modules, Qt plugins and libpython: loaded by name, never as a dependency."""
    dest, _, typecode = entry
    parts = PurePosixPath(dest.replace("\\", "/")).parts
    name = parts[-1].lower()
    return (
        typecode == "EXTENSION"
        or "plugins" in parts[:-1]
        or name.startswith(("libpython", "python3"))
    )


def prune_binaries(entries: Iterable[Entry], imports_of: ImportsOf) -> list[Entry]:
    """The entries minus plain libraries that no root reaches through its library imports.

    Hooks collect whole plugin directories and PyInstaller then bundles every library those
    plugins load (the GTK theme alone brings cairo, pango and harfbuzz); once the plugins are
    filtered, those libraries are dead weight.
    """
    entries = list(entries)
    by_name: dict[str, list[Entry]] = {}
    for entry in entries:
        by_name.setdefault(_basename(entry[0]), []).append(entry)
    needed: set[str] = set()
    todo = [entry for entry in entries if is_root(entry)]
    seen_sources: set[str] = set()
    while todo:
        entry = todo.pop()
        if entry[1] in seen_sources:
            continue
        seen_sources.add(entry[1])
        for dep in imports_of(entry[1]):
            name = _basename(dep)
            if name in needed:
                continue
            needed.add(name)
            todo.extend(by_name.get(name, ()))
    return [
        entry
        for entry in entries
        if is_root(entry) or entry[2] != "BINARY" or _basename(entry[0]) in needed
    ]


def _basename(path: str) -> str:
    return PurePosixPath(path.replace("\\", "/")).name
