"""Opening links from replies: only on an explicit click, only for safe schemes, patchable."""

from __future__ import annotations

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices

SAFE_SCHEMES = frozenset({"http", "https", "mailto"})


class LinkOpener:
    """The one place a link leaves the app; tests patch `open_external`."""

    @classmethod
    def open_external(cls, url: QUrl) -> bool:
        """Hand a URL to the desktop (browser, mail client)."""
        return bool(QDesktopServices.openUrl(url))

    @classmethod
    def open(cls, href: str) -> bool:
        """Open `href` if its scheme is safe; returns whether it was handed over."""
        url = QUrl(href)
        if not url.isValid() or url.scheme().lower() not in SAFE_SCHEMES:
            return False
        return cls.open_external(url)
