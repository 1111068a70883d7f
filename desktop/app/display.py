"""Decides, before Qt is touched, whether a GUI can start here, and says why not in one line."""

from __future__ import annotations

import os
import sys

NO_DISPLAY_HINT = (
    "run it inside a desktop session, under a virtual X server (xvfb-run hermes-qt), "
    "or use `hermes-qt-gateway` for headless use"
)

# Libraries Qt's xcb platform plugin loads; a missing one makes Qt abort with a long trace.
_XCB_LIBS = {
    "xcb-cursor": "libxcb-cursor0",
    "xkbcommon-x11": "libxkbcommon-x11-0",
    "xcb-icccm": "libxcb-icccm4",
    "xcb-keysyms": "libxcb-keysyms1",
    "xcb-shape": "libxcb-shape0",
    "xcb-render-util": "libxcb-render-util0",
    "xcb-image": "libxcb-image0",
}


def display_problem(
    environ: dict[str, str] | None = None, platform: str | None = None
) -> str | None:
    """One-line explanation of why no window can be shown, or None when one can."""
    env = os.environ if environ is None else environ
    plat = sys.platform if platform is None else platform
    if not plat.startswith("linux"):
        return None
    qpa = env.get("QT_QPA_PLATFORM", "")
    if qpa.split(":")[0] in {"offscreen", "minimal", "vnc", "eglfs", "linuxfb"}:
        return None
    if not env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY"):
        return (
            "hermes-qt: no display found (neither DISPLAY nor WAYLAND_DISPLAY is set); "
            + NO_DISPLAY_HINT
        )
    if env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY"):
        import ctypes.util  # only here: ~4 ms a start would spend for nothing on Wayland

        missing = [pkg for lib, pkg in _XCB_LIBS.items() if ctypes.util.find_library(lib) is None]
        if missing:
            return (
                "hermes-qt: Qt's X11 plugin needs system libraries that are missing: "
                f"{' '.join(missing)} (apt-get install them); or use `hermes-qt-gateway` headless"
            )
    return None
