"""End to end with a real hermes-agent 0.19.0: the user's own Hermes, local and remote."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop.core.models import ConnectionState
from desktop.core.profiles import Profile, ProfileKind
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.hermes_env import require_hermes, write_config
from tests.ui.e2e_support import App, add_profiles, until

pytestmark = [pytest.mark.hermes, pytest.mark.slow]

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
