"""Where the window's parts go: the splitter between the chat list and the chat, the Tab order,
the geometry and splitter sizes remembered, and the chat list shown when wanted and there is room.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

from PySide6.QtCore import QByteArray, QSettings, Qt
from PySide6.QtWidgets import QApplication, QMainWindow, QSplitter, QWidget

from desktop.ui.window.pane.chat_pane import ChatPane
from desktop.ui.window.sidebar import Sidebar


class Placement:
    """Lays the sidebar and the chat pane (in its `column`, under the tabs) side by side in
    `window` and keeps them placed."""

    def __init__(
        self,
        window: QMainWindow,
        sidebar: Sidebar,
        pane: ChatPane,
        settings: QSettings,
        focus_composer: Callable[[], None],
        *,
        column: QWidget,
    ) -> None:
        self._window = window
        self._sidebar = sidebar
        self._pane = pane
        self._settings = settings
        self._focus_composer = focus_composer
        self._sidebar_wanted = True  # Ctrl+B; a window too narrow for both hides it anyway
        self.splitter = QSplitter(Qt.Orientation.Horizontal, window)
        self.splitter.setAccessibleName("Sidebar and chat")
        self.splitter.addWidget(sidebar)
        self.splitter.addWidget(column)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([280, 720])
        self.splitter.setChildrenCollapsible(False)
        window.setCentralWidget(self.splitter)

    def set_tab_order(self, chain: list[QWidget]) -> None:
        for a, b in pairwise(chain):
            QWidget.setTabOrder(a, b)

    def toggle_sidebar(self) -> None:
        """Ctrl+B: hide the chat list (room for the chat at narrow widths) or show it again;
        remembered."""
        self.set_sidebar_shown(not self._sidebar_wanted)

    def set_sidebar_shown(self, shown: bool) -> None:
        self._sidebar_wanted = shown
        self._settings.setValue("ui/sidebar_hidden", not shown)
        self.fit_sidebar()

    def fit_sidebar(self) -> None:
        """The chat list shows when wanted and the window has room for it beside the chat."""
        side = self._sidebar
        room = side.minimumWidth() + self._pane.minimumSizeHint().width()
        shown = self._sidebar_wanted and self._window.width() >= room + self.splitter.handleWidth()
        self._pane.header.set_sidebar_shown(shown)
        if side.isHidden() != shown:
            return  # already as it should be
        focus = QApplication.focusWidget()
        had_focus = focus is not None and side.isAncestorOf(focus)
        side.setVisible(shown)
        if not shown and had_focus:
            self._focus_composer()

    def restore(self) -> None:
        """Geometry, splitter sizes and whether the chat list shows, as they were left."""
        geometry = self._settings.value("ui/geometry")
        if isinstance(geometry, QByteArray):
            self._window.restoreGeometry(geometry)
        splitter = self._settings.value("ui/splitter")
        if isinstance(splitter, QByteArray):
            self.splitter.restoreState(splitter)
        hidden = self._settings.value("ui/sidebar_hidden", False)
        self.set_sidebar_shown(str(hidden).lower() not in ("true", "1"))

    def save(self) -> None:
        """Remember geometry and splitter sizes."""
        self._settings.setValue("ui/geometry", self._window.saveGeometry())
        self._settings.setValue("ui/splitter", self.splitter.saveState())
        self._settings.sync()
