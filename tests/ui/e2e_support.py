"""End-to-end rig: the real Core and MainWindow over a temp data root, with a fake provider.

`App.open(root)` builds what `desktop.app.main.run` builds (Core, one controller per profile, the
MainWindow), minus the QApplication and loop, which the `qloop` fixture provides. The embedded
profile's gateway is the real child process started by the real launcher; its provider is the
`FakeOpenAIServer` named in `providers.json`, so tests control the reply text and pace.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication

from desktop.app.assembly import EMBEDDED_PROFILE_ID, AppPaths, Core
from desktop.core.link.launcher import ProcessLauncher
from desktop.core.link.profiles import FileTokenStore, Profile, ProfileKind
from desktop.core.link.transport import Transport, WebSocketTransport, open_websocket
from desktop.core.models import ChatMessage, DeliveryState, Role
from desktop.core.profile.controller import ProfileController
from desktop.gateway.providers.config import ProviderSettings
from desktop.gateway.providers.registry import save_providers
from desktop.ui.platform.tray import Tray
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.main_window import MainWindow, ProfileEntry

WAIT = 20.0  # generous: the embedded child is a fresh Python process on a busy machine


async def until(predicate: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Wait for a condition a user would see, re-checked every 10 ms, within a deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for: {what}")
        await asyncio.sleep(0.01)


def use_fake_provider(root: Path, base_url: str) -> None:
    """Point the embedded gateway of the app rooted at `root` at an OpenAI-compatible server."""
    config = AppPaths.create(str(root)).config
    save_providers(config, [ProviderSettings("fake", base_url, "fake-model", idle_timeout=30.0)])


def add_profiles(root: Path, profiles: list[Profile]) -> None:
    """Write extra (remote) profiles to the app's profiles.json."""
    config = AppPaths.create(str(root)).config
    (config / "profiles.json").write_text(json.dumps([p.to_json() for p in profiles]), "utf-8")


def use_remote_gateway(root: Path, url: str, token: str, *, pid: str, name: str) -> None:
    """The app at `root` gets one remote profile `pid` named `name`: the gateway at `url`, its
    token kept where the app keeps tokens."""
    ref = f"profile:{pid}:1"
    FileTokenStore(AppPaths.create(str(root)).config / "tokens.json").set(ref, token)
    add_profiles(root, [Profile(pid, name, ProfileKind.REMOTE, url=url, token_ref=ref)])


class Sockets:
    """The app's transport factory: the real WebSocket, each one kept so a test can drop it."""

    def __init__(self) -> None:
        self.opened: list[WebSocketTransport] = []

    async def __call__(self, url: str, **options: Any) -> Transport:
        transport = await open_websocket(url, **options)
        assert isinstance(transport, WebSocketTransport)
        self.opened.append(transport)
        return transport

    def drop_newest(self) -> None:
        """Tear the newest socket down without a close handshake, as a dropped network does."""
        self.opened[-1].abort()


@dataclass
class App:
    """One running app: its Core, controllers and shown window."""

    paths: AppPaths
    core: Core
    window: MainWindow
    controllers: dict[str, ProfileController] = field(default_factory=dict)
    sockets: Sockets = field(default_factory=Sockets)
    closed: bool = False

    @classmethod
    def open(cls, root: Path, qtbot: Any, *, start: bool = True) -> App:
        paths = AppPaths.create(str(root))
        sockets = Sockets()
        core = Core(paths, transport_factory=sockets)
        controllers: dict[str, ProfileController] = {}
        entries = []
        for profile in _profiles(core):
            controller = core.controller_for(profile)
            assert isinstance(controller, ProfileController)
            assert isinstance(profile, Profile)
            controllers[profile.id] = controller
            entries.append(ProfileEntry(profile.name, ProfileBridge(controller)))
        settings = QSettings(str(paths.config / "window.ini"), QSettings.Format.IniFormat)
        window = MainWindow(entries, settings, tray=Tray())
        qtbot.addWidget(window)
        window.resize(900, 600)
        window.show()
        window.focus_composer()
        app = cls(paths, core, window, controllers, sockets)
        if start:
            for controller in controllers.values():
                controller.start()
        return app

    @property
    def embedded(self) -> ProfileController:
        return self.controllers[EMBEDDED_PROFILE_ID]

    @property
    def gateway_child(self) -> ProcessLauncher:
        """The launcher of the embedded gateway's child process (its pid, whether it runs)."""
        return self.core.launchers[EMBEDDED_PROFILE_ID]

    async def wait_online(self, profile_id: str = EMBEDDED_PROFILE_ID) -> None:
        controller = self.controllers[profile_id]
        await until(controller.is_online, f"{profile_id} online")

    # -- what the user sees -----------------------------------------------------------------

    def messages(self) -> list[ChatMessage]:
        model = self.window.chat_view.chat_model
        return [model.message_at(row) for row in range(model.rowCount())]

    def bubbles(self, role: Role) -> list[ChatMessage]:
        return [m for m in self.messages() if m.role is role]

    def finished_replies(self) -> list[ChatMessage]:
        return [m for m in self.bubbles(Role.ASSISTANT) if not m.streaming]

    def user_confirmed(self, text: str) -> bool:
        users = [m for m in self.bubbles(Role.USER) if m.text == text]
        return len(users) == 1 and users[0].delivery is DeliveryState.CONFIRMED

    def type_and_send(self, qtbot: Any, text: str) -> None:
        edit = self.window.composer.edit
        edit.setFocus()
        qtbot.keyClicks(edit, text)
        qtbot.keyClick(edit, Qt.Key.Key_Return)

    # -- teardown ---------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the window as a user would, then the core (stops the gateway child)."""
        if self.closed:
            return
        self.closed = True
        self.window.chat_view.chat_model.flush()
        # qasync runs asyncio on Qt's loop: quitting Qt on the last window would stop the test's
        # loop too. The real app reacts to lastWindowClosed by closing the core, as done here.
        qapp = QApplication.instance()
        assert isinstance(qapp, QApplication)
        quit_on_close = qapp.quitOnLastWindowClosed()
        qapp.setQuitOnLastWindowClosed(False)
        try:
            self.window.close()
            await self.core.aclose()
        finally:
            qapp.setQuitOnLastWindowClosed(quit_on_close)


def _profiles(core: Core) -> list[Profile]:
    # The profile list moved from Core to its Preferences; accept either.
    prefs = getattr(core, "preferences", None)
    source = prefs.profiles if prefs is not None else core.profiles  # type: ignore[attr-defined]
    return list(source())


def monotonic() -> float:
    return time.monotonic()
