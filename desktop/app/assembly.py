"""The app's Qt-free objects, built once: store, drafts, outbox and one controller per profile."""

from __future__ import annotations

import errno
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from desktop.core.errors import HermesQtError

if TYPE_CHECKING:
    from desktop.core.link.channel import TransportFactory
    from desktop.core.link.launcher import ProcessLauncher
    from desktop.core.link.profiles import Profile
    from desktop.core.profile.controller import ProfileController

EMBEDDED_PROFILE_ID = "embedded"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AppPaths:
    """Where the app keeps its files; one root under --data-dir, else the per-OS user dirs."""

    data: Path
    config: Path
    state: Path

    @classmethod
    def create(cls, root: str | None) -> AppPaths:
        if root:
            base = Path(root).expanduser().resolve()
            paths = cls(base / "data", base / "config", base / "state")
        else:
            from desktop.common import dirs

            paths = cls(dirs.user_data_dir(), dirs.user_config_dir(), dirs.user_state_dir())
        for p in (paths.data, paths.config, paths.state):
            _writable_folder(p)
        return paths


class DataFolderError(HermesQtError):
    """A folder the app must write to (chats, drafts, settings, its log) cannot be written."""

    retryable = False


def _writable_folder(folder: Path) -> None:
    """Create `folder` and prove a file can be written in it, or say which folder and why."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".hermes-qt-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        why = {
            errno.EROFS: "is on a read-only disk",
            errno.EACCES: "is not writable by you",
            errno.EPERM: "is not writable by you",
            errno.ENOSPC: "is on a full disk",
        }.get(exc.errno or 0, f"cannot be written ({exc.strerror or exc})")
        raise DataFolderError(
            f"the data folder {folder} {why}: hermes-qt keeps its chats, drafts and settings "
            "there; make it writable or start with --data-dir pointing to another folder"
        ) from exc


class Core:
    """Every Qt-free object of a running app, built once and closed in reverse order."""

    def __init__(
        self, paths: AppPaths, *, transport_factory: TransportFactory | None = None
    ) -> None:
        """`transport_factory` opens every gateway socket (default: the real WebSocket)."""
        from desktop.app.preferences import Preferences
        from desktop.common.clock import AsyncioClock
        from desktop.core.disk.store import Store
        from desktop.core.link.epochs import FileEpochStore
        from desktop.core.link.profiles import FileTokenStore, KeyringTokenStore
        from desktop.core.profile.assembly import SharedParts

        self.paths = paths
        self.clock = AsyncioClock()
        store = Store(str(paths.data / "hermes-qt.sqlite3"))
        self.shared = SharedParts.over(
            store, paths.data, clock=self.clock, epochs=FileEpochStore(paths.data / "epochs.json")
        )
        self.store, self.epochs = store, self.shared.epochs
        self.tokens = KeyringTokenStore(FileTokenStore(paths.config / "tokens.json"))
        self.preferences = Preferences(paths.config, self.tokens)
        self.attachments = self.shared.attachments
        self.drafts = self.shared.drafts
        # Profile id -> its one port (the outbox reaches the profile by it) and its controller.
        self.ports = self.shared.ports
        self.outbox = self.shared.outbox
        self.controllers: dict[str, ProfileController] = {}
        # profile id -> the launcher of the gateway child it starts, if any
        self.launchers: dict[str, ProcessLauncher] = {}
        self.transport_factory = transport_factory

    def controller_for(self, profile: Profile) -> ProfileController:
        from desktop.core.profile.assembly import assemble_profile, gateway_clients

        launcher = self._launcher_for(profile)
        if launcher is not None:
            self.launchers[profile.id] = launcher
        clients = gateway_clients(profile, self.clock, transport_factory=self.transport_factory)
        parts = assemble_profile(
            profile,
            self.shared,
            clients=clients,
            launcher=launcher,
            token=self.preferences.token(profile),
        )
        self.controllers[profile.id] = parts.controller
        return parts.controller

    def _launcher_for(self, profile: Profile) -> ProcessLauncher | None:
        from desktop.core.link.launcher import (
            EmbeddedGatewayLauncher,
            HermesServeLauncher,
            hermes_home_for,
        )
        from desktop.core.link.profiles import ProfileKind

        if profile.kind is ProfileKind.EMBEDDED:
            gateway_dir = self.paths.data / "gateway"
            gateway_dir.mkdir(parents=True, exist_ok=True)
            extra = ["--config-dir", str(self.paths.config)]
            return EmbeddedGatewayLauncher(gateway_dir, extra_args=extra)
        if profile.kind is ProfileKind.LOCAL_HERMES:
            # The user's own Hermes (config, keys, skills, sessions) unless the profile names one.
            return HermesServeLauncher(
                hermes_home_for(profile.hermes_home),
                hermes=profile.hermes_path,
                log_path=self.paths.state / "logs" / f"hermes-serve-{profile.id}.log",
            )
        return None

    async def drop(self, profile_id: str) -> None:
        """A profile was removed or changed: close it on purpose (it never reconnects)."""
        controller = self.controllers.pop(profile_id, None)
        self.shared.forget(profile_id)
        self.launchers.pop(profile_id, None)
        if controller is not None:
            await controller.close()

    async def aclose(self) -> None:
        for controller in list(self.controllers.values()):
            await controller.close()
        await self.shared.aclose()
