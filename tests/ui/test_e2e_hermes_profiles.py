"""End to end with a real hermes-agent 0.19.0: the user's own Hermes, local and remote."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop.app.live_profiles import LiveProfiles
from desktop.app.settings_checks import SettingsChecks
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.models import ConnectionState
from desktop.ui.settings.dialog import SettingsDialog
from desktop.ui.settings.values import AppSettings
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.hermes_env import hermes_gateway, require_hermes, write_config
from tests.ui.e2e_support import App, add_profiles, until
from tests.ui.settings_support import click, keep_loop, result_of  # noqa: F401 (fixture)

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.usefixtures("keep_loop")]

WAIT = 180.0  # hermes serve imports a large agent on first start


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer("Hello from your own Hermes.") as fake:
        yield fake


@pytest.fixture
def hermes(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The real `hermes`, installed on PATH as a user would have it."""
    exe = require_hermes()
    monkeypatch.setenv("PATH", f"{exe.parent}:{os.environ['PATH']}")
    return exe


async def test_local_hermes_uses_the_users_own_hermes_home_on_the_first_try(
    qloop: Any,
    qtbot: Any,
    tmp_path: Path,
    provider: FakeOpenAIServer,
    hermes: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "user-hermes"  # the user's existing Hermes, configured for their model
    write_config(home, provider.base_url)
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path))  # keep the agent off this machine's real config
    add_profiles(tmp_path / "app", [Profile("mine", "My Hermes", ProfileKind.LOCAL_HERMES)])
    app = App.open(tmp_path / "app", qtbot, start=False)
    win = app.window
    try:
        dialog = settings_dialog(app, qtbot)
        dialog.profile_list.setCurrentRow(1)
        assert dialog.p_home.placeholderText() == f"{home} (your Hermes)"
        click(qtbot, dialog, "Test connection")
        assert (await result_of(dialog.p_result, WAIT)).startswith("✓ Connected")
        dialog.reject()
        hermes_controller = app.controllers["mine"]
        hermes_controller.start()
        win.profile_combo.setCurrentIndex(win.profile_combo.findData("mine"))
        await until(
            lambda: hermes_controller.status().state is ConnectionState.ONLINE, "online", WAIT
        )
        assert hermes_controller.diagnostics().epoch == 1, "online on the first try"
        assert win.connection.label.text() == "Online"
        app.type_and_send(qtbot, "hello hermes")
        await until(
            lambda: any("own Hermes" in m.text for m in app.finished_replies()), "reply", WAIT
        )
        assert provider.requests, "the reply came through the user's configured model"
        # The conversation lives in the user's Hermes, not in a private copy inside the app.
        assert (home / "state.db").exists() and (home / "sessions").is_dir()
        assert not list((tmp_path / "app").rglob("state.db"))
    finally:
        await app.close()


def settings_dialog(app: App, qtbot: Any) -> SettingsDialog:
    """Settings as the app opens them: saving applies the profiles at once, checks are real."""
    prefs = app.core.preferences
    live = LiveProfiles(app.core, app.window, lambda entry: None)

    def save(values: AppSettings) -> None:
        before = {p.id: p for p in prefs.profiles()}
        prefs.save(values)
        live.apply_soon(before, {p.id for p in values.profiles if p.token})

    checks = SettingsChecks(prefs, app.paths.config, app.paths.state)
    dialog = SettingsDialog(prefs.load(), save, app.window, checks=checks)
    dialog.show()
    return dialog


async def test_remote_hermes_added_in_settings_connects_on_the_first_try(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    async with hermes_gateway(tmp_path / "remote-hermes", provider.base_url) as gw:
        app = App.open(tmp_path / "app", qtbot, start=False)
        win = app.window
        try:
            dialog = settings_dialog(app, qtbot)
            click(qtbot, dialog, "Add profile")
            dialog.p_kind.setCurrentIndex(dialog.p_kind.findData(ProfileKind.REMOTE))
            assert dialog.p_url.placeholderText() == "wss://host:port/api/ws"
            dialog.p_name.setText("Hermes box")
            qtbot.keyClicks(dialog.p_url, gw.url)
            qtbot.keyClicks(dialog.p_token, "wrong-token")
            click(qtbot, dialog, "Test connection")
            refused = await result_of(dialog.p_result, WAIT)
            assert refused.startswith("✗ the gateway refused the token: enter the right token")
            dialog.p_token.clear()
            qtbot.keyClicks(dialog.p_token, gw.token)
            click(qtbot, dialog, "Test connection")
            assert (await result_of(dialog.p_result, WAIT)).startswith("✓ Connected")
            click(qtbot, dialog, "Save")
            assert not dialog.isVisible()
            combo = win.profile_combo
            await until(lambda: combo.findText("Hermes box") >= 0, "profile listed", WAIT)
            pid = combo.itemData(combo.findText("Hermes box"))
            combo.setCurrentIndex(combo.findText("Hermes box"))
            controller = app.core.controllers[pid]
            await until(lambda: controller.status().state is ConnectionState.ONLINE, "online", WAIT)
            assert controller.diagnostics().epoch == 1, "online on the first try"
            app.type_and_send(qtbot, "hello remote hermes")
            await until(
                lambda: any("own Hermes" in m.text for m in app.finished_replies()), "reply", WAIT
            )
        finally:
            await app.close()
