"""Which Qt plugins, Qt libraries and Python modules the frozen app keeps, per OS."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

# Plugins per category, by bare name (no "lib" prefix, no extension). A category that is not
# listed is dropped whole: the app uses widgets, SVG icons and no Qt networking, printing,
# SQL, QML or multimedia.
_COMMON_PLUGINS: dict[str, frozenset[str]] = {
    # SVG icons go through the icon engine; the image formats cover pasted/attached images.
    "iconengines": frozenset({"qsvgicon"}),
    "imageformats": frozenset({"qsvg", "qpng", "qjpeg", "qgif", "qico", "qwebp"}),
}
_PLATFORM_PLUGINS: dict[str, dict[str, frozenset[str]]] = {
    "linux": {
        # offscreen/minimal run --self-test and CI; xcb and wayland show real windows.
        "platforms": frozenset({"qxcb", "qwayland", "qoffscreen", "qminimal"}),
        "xcbglintegrations": frozenset({"qxcb-glx-integration", "qxcb-egl-integration"}),
        # The portal theme gives native file dialogs everywhere without bundling GTK (qgtk3
        # would drag the build host's GTK stack into the bundle).
        "platformthemes": frozenset({"qxdgdesktopportal"}),
        "platforminputcontexts": frozenset(
            {"composeplatforminputcontextplugin", "ibusplatforminputcontextplugin"}
        ),
        "wayland-shell-integration": frozenset({"xdg-shell"}),
        "wayland-decoration-client": frozenset({"adwaita", "bradient"}),
        "wayland-graphics-integration-client": frozenset({"qt-plugin-wayland-egl"}),
    },
    "win32": {
        "platforms": frozenset({"qwindows", "qoffscreen", "qminimal"}),
        "styles": frozenset({"qmodernwindowsstyle", "qwindowsvistastyle"}),
    },
    "darwin": {
        "platforms": frozenset({"qcocoa", "qoffscreen", "qminimal"}),
        "styles": frozenset({"qmacstyle"}),
    },
}

# Qt Python modules the app never imports (PySide6-Essentials and -Addons names). QtNetwork
# (network changes with a remote profile; single instance where Python has no AF_UNIX) is
# used; QtDBus is kept (sleep notices now come through jeepney).
UNUSED_QT_MODULES: tuple[str, ...] = (
    "PySide6.Qt3DAnimation",
    "PySide6.Qt3DCore",
    "PySide6.Qt3DExtras",
    "PySide6.Qt3DInput",
    "PySide6.Qt3DLogic",
    "PySide6.Qt3DRender",
    "PySide6.QtAxContainer",
    "PySide6.QtBluetooth",
    "PySide6.QtCharts",
    "PySide6.QtConcurrent",
    "PySide6.QtDataVisualization",
    "PySide6.QtDesigner",
    "PySide6.QtGraphs",
    "PySide6.QtGraphsWidgets",
    "PySide6.QtHelp",
    "PySide6.QtHttpServer",
    "PySide6.QtLabsStyleKit",
    "PySide6.QtLocation",
    "PySide6.QtMultimedia",
    "PySide6.QtMultimediaWidgets",
    "PySide6.QtNetworkAuth",
    "PySide6.QtNfc",
    "PySide6.QtOpenGL",
    "PySide6.QtOpenGLWidgets",
    "PySide6.QtPdf",
    "PySide6.QtPdfWidgets",
    "PySide6.QtPositioning",
    "PySide6.QtPrintSupport",
    "PySide6.QtQml",
    "PySide6.QtQmlFeatures",
    "PySide6.QtQuick",
    "PySide6.QtQuick3D",
    "PySide6.QtQuickControls2",
    "PySide6.QtQuickTest",
    "PySide6.QtQuickWidgets",
    "PySide6.QtRemoteObjects",
    "PySide6.QtScxml",
    "PySide6.QtSensors",
    "PySide6.QtSerialBus",
    "PySide6.QtSerialPort",
    "PySide6.QtSpatialAudio",
    "PySide6.QtSql",
    "PySide6.QtStateMachine",
    "PySide6.QtSvgWidgets",
    "PySide6.QtTest",
    "PySide6.QtTextToSpeech",
    "PySide6.QtUiTools",
    "PySide6.QtWebChannel",
    "PySide6.QtWebEngineCore",
    "PySide6.QtWebEngineQuick",
    "PySide6.QtWebEngineWidgets",
    "PySide6.QtWebSockets",
    "PySide6.QtWebView",
    "PySide6.QtXml",
)

# Standard-library and tooling packages nothing at run time imports.
UNUSED_PYTHON_MODULES: tuple[str, ...] = (
    "tkinter",
    "_tkinter",
    "turtle",
    "turtledemo",
    "idlelib",
    "lib2to3",
    "pydoc_data",
    "test",
    "unittest",
    "doctest",
    "ensurepip",
    "venv",
    "distutils",
    "setuptools",
    "pkg_resources",
    "pip",
    "PyInstaller",
    "pytest",
    "_pytest",
    "hypothesis",
    "mypy",
    "ruff",
)

# Qt shared libraries that only unused modules or dropped plugins need.
_UNUSED_QT_LIB = re.compile(
    r"Qt6?(3D|Bluetooth|Charts|Concurrent|DataVisualization|Designer|EglFS|EglFs|Graphs|Help|"
    r"HttpServer|Labs|Location|Lottie|Multimedia|NetworkAuth|Nfc|OpenGLWidgets|Pdf|Positioning|"
    r"PrintSupport|Qml|Quick|RemoteObjects|Scxml|Sensors|SerialBus|SerialPort|ShaderTools|"
    r"SpatialAudio|Sql|StateMachine|SvgWidgets|Test|TextToSpeech|UiTools|VirtualKeyboard|"
    r"WaylandCompositor|WaylandEglCompositor|WebChannel|WebEngine|WebSockets|WebView|WlShell|Xml)"
)


def plugin_name(filename: str) -> str:
    """`libqxcb.so` / `qwindows.dll` / `libqcocoa.dylib` -> `qxcb` / `qwindows` / `qcocoa`."""
    stem = filename.split(".", 1)[0]
    return stem[3:] if stem.startswith("lib") else stem


def wanted_plugins(platform: str) -> dict[str, frozenset[str]]:
    """The plugin allowlist for a `sys.platform` value."""
    key = "linux" if platform.startswith("linux") else platform
    return {**_COMMON_PLUGINS, **_PLATFORM_PLUGINS.get(key, {})}


def keep_entry(dest: str, platform: str) -> bool:
    """Whether a bundled file (its destination path inside the bundle) stays in the build."""
    parts = PurePosixPath(dest.replace("\\", "/")).parts
    # Plugins sit in PySide6/Qt/plugins (Linux, macOS) or PySide6/plugins (Windows).
    plugins_at = _index(parts, "plugins", within=3)
    if parts[:1] == ("PySide6",) and plugins_at is not None and len(parts) > plugins_at + 2:
        category, filename = parts[plugins_at + 1], parts[-1]
        return plugin_name(filename) in wanted_plugins(platform).get(category, frozenset())
    if parts[:1] == ("PySide6",) and "qml" in parts[1:3]:
        return False  # QML imports tree
    if parts[:1] == ("PySide6",) and "translations" in parts[1:3]:
        return False  # the app installs no QTranslator: its UI and Qt's dialogs stay English
    return not any(_is_unused_qt_library(part) for part in parts)


def _index(parts: tuple[str, ...], name: str, within: int) -> int | None:
    return parts.index(name) if name in parts[:within] else None


def _is_unused_qt_library(name: str) -> bool:
    # libQt6Qml.so.6 (Linux), Qt6Qml.dll (Windows), QtQml.framework (macOS).
    is_qt = name.startswith(("libQt6", "Qt6")) or (
        name.startswith("Qt") and name.endswith(".framework")
    )
    return is_qt and _UNUSED_QT_LIB.match(name.removeprefix("lib")) is not None


def filter_toc(
    entries: Iterable[tuple[str, str, str]], platform: str
) -> list[tuple[str, str, str]]:
    """The entries of a PyInstaller TOC (dest, source, typecode) that `keep_entry` keeps."""
    return [entry for entry in entries if keep_entry(entry[0], platform)]
