"""The settings dialog shows only the fields a profile's kind uses."""

from __future__ import annotations

from typing import Any

from desktop.core.link.profiles import ProfileKind
from desktop.ui.settings.dialog import SettingsDialog
from desktop.ui.settings.values import AppSettings, ProfileSettings


def test_only_a_remote_profile_offers_url_token_and_tls(qtbot: Any) -> None:
    values = AppSettings(
        profiles=[
            ProfileSettings("embedded", "This computer"),
            ProfileSettings("w", "Work", ProfileKind.REMOTE, "wss://gw.example/api/ws"),
        ]
    )
    dialog = SettingsDialog(values, lambda v: None)
    qtbot.addWidget(dialog)
    dialog.profile_list.setCurrentRow(0)
    assert not dialog.p_url.isEnabled() and not dialog.p_token.isEnabled()
    assert not dialog.p_remove.isEnabled(), "the app's own gateway profile cannot be removed"
    dialog.profile_list.setCurrentRow(1)
    assert dialog.p_url.isEnabled() and dialog.p_token.isEnabled() and dialog.p_ca.isEnabled()
    assert dialog.p_remove.isEnabled()
    assert dialog.p_url.text() == "wss://gw.example/api/ws"
