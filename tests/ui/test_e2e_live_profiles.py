"""End to end: a profile added, changed or removed in Settings takes effect without a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop.app.live_profiles import LiveProfiles
from desktop.core.link.profiles import ProfileKind
from desktop.core.models import ConnectionState
from desktop.gateway.providers.offline import OfflineProvider
from desktop.gateway.rpc.server import GatewayConfig, GatewayServer
from desktop.ui.settings.values import ProfileSettings
from tests.ui.e2e_support import App, until

pytestmark = pytest.mark.slow

TOKEN = "live-profile-token-0123456789abcdef"


def _combo(app: App) -> list[str]:
    combo = app.window.profile_combo
    return [combo.itemText(i) for i in range(combo.count())]


async def test_profiles_edited_in_settings_apply_at_once(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    gateway = GatewayServer(
        GatewayConfig(data_dir=tmp_path / "remote-gw", token=TOKEN),
        OfflineProvider(chunk_interval=0.005),
    )
    url = await gateway.start()
    app = App.open(tmp_path, qtbot)
    prefs = app.core.preferences
    live = LiveProfiles(app.core, app.window, lambda entry: None)
    try:
        await app.wait_online("embedded")
        embedded_controller = app.core.controllers["embedded"]

        # Add a remote profile: listed and connected, the embedded one untouched.
        settings = prefs.load()
        settings.profiles.append(ProfileSettings("work", "Work", ProfileKind.REMOTE, url, TOKEN))
        before = {p.id: p for p in prefs.profiles()}
        prefs.save(settings)
        await live.apply(before, {"work"})
        assert _combo(app) == ["This computer", "Work"]
        work = app.core.controllers["work"]
        await until(lambda: work.status().state is ConnectionState.ONLINE, "work online")
        assert app.core.controllers["embedded"] is embedded_controller

        # Rename only: same connection, new label.
        settings = prefs.load()
        settings.profiles[1].name = "Office"
        before = {p.id: p for p in prefs.profiles()}
        prefs.save(settings)
        await live.apply(before, set())
        assert _combo(app) == ["This computer", "Office"]
        assert app.core.controllers["work"] is work, "a rename must not reconnect"

        # Remove it: gone from the window, its socket closed for good.
        settings = prefs.load()
        del settings.profiles[1]
        before = {p.id: p for p in prefs.profiles()}
        prefs.save(settings)
        await live.apply(before, set())
        assert _combo(app) == ["This computer"]
        assert "work" not in app.core.controllers
        assert work.status().state is ConnectionState.CLOSED
        assert app.window.profile_id == "embedded"
    finally:
        await live.aclose()
        await app.close()
        await gateway.stop()
