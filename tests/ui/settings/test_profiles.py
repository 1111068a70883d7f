"""Profiles in Settings: the remote URL form, its validation, and a real Test connection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop.core.link.profiles import ProfileKind
from desktop.gateway.providers.offline import OfflineProvider
from desktop.gateway.rpc.server import GatewayConfig, GatewayServer
from desktop.ui.settings.dialog import SettingsDialog
from desktop.ui.settings.values import ProfileSettings
from tests.ui.settings_support import (
    click,
    closed_port,
    keep_loop,  # noqa: F401 (fixture)
    make_prefs,
    open_dialog,
    result_of,
)

pytestmark = pytest.mark.usefixtures("keep_loop")

TOKEN = "settings-test-token-0123456789abcdef"


def _remote(dialog: SettingsDialog, qtbot: Any) -> None:
    click(qtbot, dialog, "Add profile")
    dialog.p_kind.setCurrentIndex(dialog.p_kind.findData(ProfileKind.REMOTE))


def _type(qtbot: Any, edit: Any, text: str) -> None:
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClicks(edit, text)


def test_a_remote_profile_shows_the_url_form_and_refuses_a_bad_url(
    qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefs = make_prefs(tmp_path, monkeypatch)
    dialog = open_dialog(qtbot, prefs, tmp_path)
    assert not dialog.p_url.isVisible(), "the app's own gateway has no URL"
    _remote(dialog, qtbot)
    assert dialog.p_url.isVisible() and dialog.p_url.placeholderText() == "wss://host:port/api/ws"
    assert "wss://host:8443/api/ws" in dialog.p_url_hint.text() and dialog.p_url_hint.isVisible()
    _type(qtbot, dialog.p_name, "Office")
    _type(qtbot, dialog.p_url, "https://gw.example.com/api/ws")
    click(qtbot, dialog, "Save")
    assert dialog.isVisible() and dialog.p_url.property("invalid") is True
    assert dialog.error.text() == (
        "Not saved: Office: gateway URL must start with ws:// or wss:// (got 'https')"
    )
    _type(qtbot, dialog.p_url, "ws://10.1.2.3:8765/api/ws")
    click(qtbot, dialog, "Save")
    assert dialog.isVisible() and "refusing plain ws:// to non-loopback host" in dialog.error.text()
    assert dialog.p_url.text() == "ws://10.1.2.3:8765/api/ws", "what was typed is kept"
    assert not (tmp_path / "profiles.json").exists()
    _type(qtbot, dialog.p_url, "wss://gw.example.com:8443/api/ws")
    assert not dialog.error.isVisible(), "fixing the field takes the complaint away"
    click(qtbot, dialog, "Save")
    assert not dialog.isVisible()
    assert [p.url for p in prefs.profiles()] == ["", "wss://gw.example.com:8443/api/ws"]


async def test_test_connection_reaches_the_gateway_and_names_a_refused_token(
    qloop: Any, qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway = GatewayServer(
        GatewayConfig(data_dir=tmp_path / "gw", token=TOKEN), OfflineProvider(chunk_interval=0.01)
    )
    url = await gateway.start()
    try:
        prefs = make_prefs(tmp_path, monkeypatch)
        dialog = open_dialog(qtbot, prefs, tmp_path)
        assert not dialog.test_profile.isEnabled(), "nothing to test on the app's own gateway"
        _remote(dialog, qtbot)
        _type(qtbot, dialog.p_url, url)
        _type(qtbot, dialog.p_token, "not-the-token")
        click(qtbot, dialog, "Test connection")
        text = await result_of(dialog.p_result)
        assert text.startswith("✗ the gateway refused the token: enter the right token"), text
        _type(qtbot, dialog.p_token, TOKEN)
        click(qtbot, dialog, "Test connection")
        assert (await result_of(dialog.p_result)).startswith("✓ Connected: the gateway is ready")
        click(qtbot, dialog, "Save")
        # Reopened, the token shows only as "saved": Test uses the stored one.
        dialog = open_dialog(qtbot, prefs, tmp_path)
        dialog.profile_list.setCurrentRow(1)
        assert dialog.p_token.text() == "" and dialog.p_token.placeholderText().startswith("Saved")
        click(qtbot, dialog, "Test connection")
        assert (await result_of(dialog.p_result)).startswith("✓ Connected")
        port = closed_port()
        _type(qtbot, dialog.p_url, f"ws://127.0.0.1:{port}/api/ws")
        assert not dialog.p_result.isVisible(), "a result about another URL is taken away"
        click(qtbot, dialog, "Test connection")
        assert (await result_of(dialog.p_result)).startswith(
            f"✗ cannot connect: cannot reach ws://127.0.0.1:{port}/api/ws"
        )
        _type(qtbot, dialog.p_url, "gw.example.com")
        click(qtbot, dialog, "Test connection")
        assert dialog.p_result.text() == (
            "✗ gateway URL must start with ws:// or wss:// (got '')"
        ), "a malformed URL is named at once, no socket opened"
    finally:
        await gateway.stop()


async def test_local_hermes_not_installed_is_explained_and_its_path_can_be_chosen(
    qloop: Any, qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "my-hermes"))
    prefs = make_prefs(tmp_path, monkeypatch)
    values = prefs.load()
    values.profiles.append(ProfileSettings("mine", "My Hermes", ProfileKind.LOCAL_HERMES))
    prefs.save(values)
    dialog = open_dialog(qtbot, prefs, tmp_path)
    dialog.profile_list.setCurrentRow(1)
    assert dialog.p_home.isVisible() and not dialog.p_url.isVisible()
    assert dialog.p_home.placeholderText() == f"{tmp_path / 'my-hermes'} (your Hermes)"
    assert dialog.p_hermes.placeholderText() == "not found on PATH: choose it"
    click(qtbot, dialog, "Test connection")
    assert await result_of(dialog.p_result) == (
        "✗ hermes not found: install hermes-agent or set its path in Settings → Profiles"
    )
    picked = tmp_path / "bin" / "hermes"
    monkeypatch.setattr(
        SettingsDialog, "pick_hermes_program", classmethod(lambda cls, parent: str(picked))
    )
    click(qtbot, dialog, "Choose the hermes program")
    assert dialog.p_hermes.text() == str(picked)
    click(qtbot, dialog, "Save")
    assert dialog.isVisible() and dialog.p_hermes.property("invalid") is True
    assert f"hermes not found at {picked}" in dialog.error.text()
