"""Libraries only dropped plugins needed leave the bundle; everything loaded stays."""

from __future__ import annotations

from tests.packaging.modules import load

prune = load("prune")

GRAPH = {
    "/w/_ssl.so": ["libssl.so.3"],
    "/s/libssl.so.3": ["libcrypto.so.3"],
    "/p/libqxcb.so": ["libQt6XcbQpa.so.6", "libxcb.so.1"],
    "/q/libQt6XcbQpa.so.6": ["libxcb-cursor.so.0"],
}


def _imports(source: str) -> list[str]:
    return GRAPH.get(source, [])


ENTRIES = [
    ("python3.11/lib-dynload/_ssl.so", "/w/_ssl.so", "EXTENSION"),
    ("libssl.so.3", "/s/libssl.so.3", "BINARY"),
    ("libcrypto.so.3", "/s/libcrypto.so.3", "BINARY"),
    ("PySide6/Qt/plugins/platforms/libqxcb.so", "/p/libqxcb.so", "BINARY"),
    ("PySide6/Qt/lib/libQt6XcbQpa.so.6", "/q/libQt6XcbQpa.so.6", "BINARY"),
    ("libxcb.so.1", "/s/libxcb.so.1", "BINARY"),
    ("libxcb-cursor.so.0", "/s/libxcb-cursor.so.0", "BINARY"),
    # What the (already filtered out) GTK theme plugin had pulled in:
    ("libcairo.so.2", "/s/libcairo.so.2", "BINARY"),
    ("libpango-1.0.so.0", "/s/libpango-1.0.so.0", "BINARY"),
    ("libpython3.11.so.1.0", "/s/libpython3.11.so.1.0", "BINARY"),
    ("resources/icons/app.svg", "/r/app.svg", "DATA"),
]


def test_orphaned_libraries_are_dropped() -> None:
    kept = {dest for dest, _, _ in prune.prune_binaries(ENTRIES, _imports)}
    assert "libcairo.so.2" not in kept
    assert "libpango-1.0.so.0" not in kept


def test_direct_and_transitive_dependencies_of_roots_stay() -> None:
    kept = {dest for dest, _, _ in prune.prune_binaries(ENTRIES, _imports)}
    for dest in ("libssl.so.3", "libcrypto.so.3", "libxcb.so.1", "libxcb-cursor.so.0"):
        assert dest in kept
    assert "PySide6/Qt/lib/libQt6XcbQpa.so.6" in kept


def test_roots_and_data_always_stay() -> None:
    kept = {dest for dest, _, _ in prune.prune_binaries(ENTRIES, lambda _: [])}
    assert "PySide6/Qt/plugins/platforms/libqxcb.so" in kept
    assert "python3.11/lib-dynload/_ssl.so" in kept
    assert "libpython3.11.so.1.0" in kept
    assert "resources/icons/app.svg" in kept
    assert "libssl.so.3" not in kept
