"""A profile's link (the app's own wiring: supervisor, router) on a real embedded gateway child,
online; the runtime ids the router adopts are recorded in a store of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from desktop.common.clock import AsyncioClock
from desktop.core.chats.router import SessionRouter
from desktop.core.disk.store import Store
from desktop.core.link.epochs import FileEpochStore
from desktop.core.link.launcher import EmbeddedGatewayLauncher
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.link.supervisor import ConnectionSupervisor
from desktop.core.models import ConnectionState
from desktop.core.profile.assembly import gateway_clients, link_profile
from tests.support.waiting import wait_notified


def embedded_launcher(tmp_path: Path) -> EmbeddedGatewayLauncher:
    """The gateway child with its data in `tmp_path / "gw"`, its config in `tmp_path / "config"`."""
    return EmbeddedGatewayLauncher(
        tmp_path / "gw", extra_args=["--config-dir", str(tmp_path / "config")], ready_timeout=60
    )


@asynccontextmanager
async def online_embedded(
    tmp_path: Path, launcher: EmbeddedGatewayLauncher | None = None, **supervisor: Any
) -> AsyncIterator[tuple[ConnectionSupervisor, SessionRouter]]:
    """Start the gateway (`embedded_launcher(tmp_path)` unless given) and wait until the
    router has synced with it; `supervisor` goes to `link_profile` (e.g. `random`)."""
    launcher = launcher or embedded_launcher(tmp_path)
    profile = Profile(id="embedded", name="This computer", kind=ProfileKind.EMBEDDED)
    store = Store(tmp_path / "hermes-qt.sqlite3")
    clock = AsyncioClock()
    link = link_profile(
        profile,
        clients=gateway_clients(profile, clock),
        store=store,
        epochs=FileEpochStore(tmp_path / "epochs.json"),
        clock=clock,
        launcher=launcher,
        **supervisor,
    )
    sup, router = link.supervisor, link.router
    try:
        sup.start()
        await wait_notified(
            lambda: sup.status.state is ConnectionState.ONLINE and router.synced_epoch == sup.epoch,
            [sup.add_status_listener, router.on_synced],
            "online",
        )
        yield sup, router
    finally:
        await router.close()
        await sup.close()
        store.close()
