"""The frozen app keeps the Qt plugins and libraries it loads and drops the rest."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.packaging.modules import load

qt = load("qt_selection")


@pytest.mark.parametrize(
    "dest",
    [
        "PySide6/Qt/plugins/platforms/libqxcb.so",
        "PySide6/Qt/plugins/platforms/libqwayland.so",
        "PySide6/Qt/plugins/platforms/libqoffscreen.so",
        "PySide6/Qt/plugins/iconengines/libqsvgicon.so",
        "PySide6/Qt/plugins/imageformats/libqsvg.so",
        "PySide6/Qt/plugins/imageformats/libqjpeg.so",
        "PySide6/Qt/plugins/xcbglintegrations/libqxcb-glx-integration.so",
        "PySide6/Qt/plugins/wayland-shell-integration/libxdg-shell.so",
        "PySide6/Qt/lib/libQt6Widgets.so.6",
        "PySide6/Qt/lib/libQt6Svg.so.6",
        "PySide6/Qt/lib/libQt6XcbQpa.so.6",
        "PySide6/Qt/lib/libQt6WaylandClient.so.6",
        "PySide6/Qt/lib/libQt6OpenGL.so.6",  # the wayland-egl client plugin links it
        "PySide6/QtWidgets.abi3.so",
        "libssl.so.3",
        "base_library.zip",
    ],
)
def test_linux_build_keeps_what_shows_a_window_with_icons(dest: str) -> None:
    assert qt.keep_entry(dest, "linux")


@pytest.mark.parametrize(
    "dest",
    [
        "PySide6/Qt/plugins/platforms/libqeglfs.so",
        "PySide6/Qt/plugins/platforms/libqvnc.so",
        "PySide6/Qt/plugins/platformthemes/libqgtk3.so",
        "PySide6/Qt/plugins/platforminputcontexts/libqtvirtualkeyboardplugin.so",
        "PySide6/Qt/plugins/sqldrivers/libqsqlite.so",
        "PySide6/Qt/plugins/qmltooling/libqmldbg_tcp.so",
        "PySide6/Qt/plugins/imageformats/libqpdf.so",
        "PySide6/Qt/plugins/tls/libqopensslbackend.so",
        "PySide6/Qt/lib/libQt6Qml.so.6",
        "PySide6/Qt/lib/libQt6Quick.so.6",
        "PySide6/Qt/lib/libQt6WebEngineCore.so.6",
        "PySide6/Qt/lib/libQt6Pdf.so.6",
        "PySide6/Qt/lib/libQt6WaylandCompositor.so.6",
        "PySide6/Qt/qml/QtQuick/Controls/qmldir",
        "PySide6/Qt/translations/qtbase_de.qm",
        "libQt6Qml.so.6",
    ],
)
def test_linux_build_drops_unused_qt(dest: str) -> None:
    assert not qt.keep_entry(dest, "linux")


def test_windows_layout_keeps_the_windows_platform_and_drops_qml() -> None:
    assert qt.keep_entry("PySide6\\plugins\\platforms\\qwindows.dll", "win32")
    assert qt.keep_entry("PySide6\\plugins\\styles\\qmodernwindowsstyle.dll", "win32")
    assert not qt.keep_entry("PySide6\\plugins\\platforms\\qdirect2d.dll", "win32")
    assert not qt.keep_entry("PySide6\\Qt6Qml.dll", "win32")
    assert qt.keep_entry("PySide6\\Qt6Widgets.dll", "win32")


def test_macos_layout_keeps_cocoa_and_drops_framework_of_unused_modules() -> None:
    assert qt.keep_entry("PySide6/Qt/plugins/platforms/libqcocoa.dylib", "darwin")
    assert not qt.keep_entry("PySide6/Qt/plugins/platforms/libqxcb.so", "darwin")
    assert not qt.keep_entry("PySide6/Qt/lib/QtQuick.framework/Versions/A/QtQuick", "darwin")
    assert qt.keep_entry("PySide6/Qt/lib/QtWidgets.framework/Versions/A/QtWidgets", "darwin")


def test_excluded_python_modules_spare_what_the_app_imports() -> None:
    excluded = set(qt.UNUSED_QT_MODULES) | set(qt.UNUSED_PYTHON_MODULES)
    for needed in ("PySide6.QtCore", "PySide6.QtGui", "PySide6.QtWidgets", "PySide6.QtSvg"):
        assert needed not in excluded
    # Single instance (QLocalServer) and the network/sleep signals (QtDBus): the frozen app
    # failed to start without the first.
    for needed in ("PySide6.QtNetwork", "PySide6.QtDBus"):
        assert needed not in excluded
    assert qt.keep_entry("PySide6/Qt/lib/libQt6Network.so.6", "linux")
    for needed in ("asyncio", "sqlite3", "ssl", "json", "ctypes", "email", "http"):
        assert needed not in excluded
    assert "PySide6.QtWebEngineCore" in excluded and "tkinter" in excluded


def _installed_plugins() -> list[tuple[str, Path]]:
    import PySide6

    plugins = Path(PySide6.__file__).parent / "Qt" / "plugins"
    return [(f"PySide6/Qt/plugins/{p.relative_to(plugins)}", p) for p in plugins.rglob("*.so")]


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("ldd") is None, reason="Linux ELF check"
)
def test_every_kept_plugin_finds_its_qt_libraries_in_the_bundle() -> None:
    # A plugin whose Qt library we dropped would fail to load only on the user's machine.
    kept = [(dest, path) for dest, path in _installed_plugins() if qt.keep_entry(dest, "linux")]
    assert any(dest.endswith("libqxcb.so") for dest, _ in kept)
    missing: list[str] = []
    for dest, path in kept:
        out = subprocess.run(["ldd", str(path)], capture_output=True, text=True, check=False)
        for line in out.stdout.splitlines():
            soname = line.strip().split(" ", 1)[0]
            if soname.startswith("libQt6") and not qt.keep_entry(
                f"PySide6/Qt/lib/{soname}", "linux"
            ):
                missing.append(f"{dest} needs {soname}")
    assert missing == []
