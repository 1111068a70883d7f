"""What Enter does while a reply runs (queue, steer, or stop and send), chosen from the Send
button's menu. Kept where the gateway keeps it (Hermes' `config.set {key: "busy"}`, read back
on every connect); a gateway that keeps none (the embedded one) has it kept in this app's
settings, per profile. The composer's `busy_mode` is set from here only."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QObject, QSettings, Qt
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu, QToolButton

from desktop.ui.backend import ChatBackend
from desktop.ui.compose.composer import Composer

MODES = (
    ("queue", "Queue it as the next message"),
    ("steer", "Steer the running reply with it"),
    ("interrupt", "Stop the reply and send it"),
)
TITLE = "While a reply runs, Enter:"


class OpenProfile(Protocol):
    @property
    def backend(self) -> ChatBackend | None: ...
    @property
    def profile_id(self) -> str: ...


class BusyChoice(QObject):
    """The Send button's menu of busy defaults for the shown profile."""

    def __init__(self, chat: OpenProfile, composer: Composer, settings: QSettings) -> None:
        super().__init__(composer)
        self._chat = chat
        self._composer = composer
        self._settings = settings
        self.menu = QMenu(composer)
        self.menu.setObjectName("busyMenu")
        self.menu.setAccessibleName("What Enter does while a reply runs")
        self.menu.setToolTipsVisible(True)
        heading = self.menu.addAction(TITLE)
        heading.setEnabled(False)
        group = QActionGroup(self.menu)
        group.setExclusive(True)
        self.actions: dict[str, QAction] = {}
        for mode, text in MODES:
            action = self.menu.addAction(text)
            action.setCheckable(True)
            group.addAction(action)
            action.triggered.connect(lambda _=False, m=mode: self._on_menu_chosen(m))
            self.actions[mode] = action
        # Its own small button: the Send button is disabled while the box is empty.
        self.button = QToolButton(composer)
        self.button.setObjectName("busyChoice")
        self.button.setArrowType(Qt.ArrowType.DownArrow)
        self.button.setAutoRaise(True)
        self.button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.button.setMenu(self.menu)
        self.button.setAccessibleName("What Enter does while a reply runs")
        self.button.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        composer.add_send_option(self.button)
        self.refresh()

    def mode(self) -> str:
        """The busy default in force: the gateway's, else this app's for the profile."""
        backend = self._chat.backend
        kept = backend.busy_default() if backend is not None else None
        if kept:
            return kept
        local = self._settings.value(self._key(), "queue")
        return local if isinstance(local, str) and local in dict(MODES) else "queue"

    def refresh(self) -> None:
        """The profile, its connection or the gateway's value changed: show and use it."""
        mode = self.mode()
        self._composer.busy_mode = mode
        backend = self._chat.backend
        where = (
            "kept by the gateway"
            if backend is not None and backend.busy_default()
            else "kept in this app (the gateway keeps none)"
        )
        for name, action in self.actions.items():
            action.setChecked(name == mode)
            action.setToolTip(where)
        said = dict(MODES)[mode]
        self.button.setToolTip(f"{TITLE} {said[0].lower()}{said[1:]} ({where})")
        self.button.setAccessibleDescription(self.button.toolTip())
        steer_ok, why = backend.steer_available() if backend is not None else (False, "")
        self.actions["steer"].setEnabled(steer_ok or mode == "steer")
        if not steer_ok and why:
            self.actions["steer"].setToolTip(f"{why}; Enter queues instead")

    def _key(self) -> str:
        return f"busy_default/{self._chat.profile_id}"

    def _on_menu_chosen(self, mode: str) -> None:
        backend = self._chat.backend
        if backend is not None and backend.busy_default():
            # The gateway keeps it: shown once it answers (the status comes again).
            backend.keep_busy_default(mode)
            self.refresh()  # until then the menu shows what is in force
            return
        self._settings.setValue(self._key(), mode)
        self.refresh()
