"""Settings dialog edits plain values and hands them to the caller's save callback."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QPushButton, QWidget

from desktop.core.link.profiles import ProfileKind
from desktop.ui.settings.dialog import SettingsDialog
from desktop.ui.settings.values import AppSettings, ProfileSettings, ProviderSettings


def _values() -> AppSettings:
    return AppSettings(
        profiles=[ProfileSettings("emb", "Embedded")],
        providers=[
            ProviderSettings("primary", "https://a.example/v1", "m1", "k1"),
            ProviderSettings("backup", "https://b.example/v1", "m2", "k2"),
        ],
    )


def _button(parent: QWidget, name: str) -> QPushButton:
    (button,) = [b for b in parent.findChildren(QPushButton) if b.accessibleName() == name]
    return button


def test_save_passes_edited_values_and_leaves_input_untouched(qtbot: Any) -> None:
    original = _values()
    saved: list[AppSettings] = []
    d = SettingsDialog(original, saved.append)
    qtbot.addWidget(d)
    _button(d, "Add profile").click()
    d.p_name.setText("Work")
    d.p_kind.setCurrentIndex(2)
    d.p_url.setText("wss://gw.example:8443")
    d.p_token.setText("s3cret")
    d.p_insecure.setChecked(False)
    d.theme.setCurrentIndex(d.theme.findData("dark"))
    d.send_key.setCurrentIndex(d.send_key.findData("ctrl_enter"))
    d.close_to_tray.setChecked(True)
    assert d.keep_awake.isChecked() and d.keep_awake.accessibleName() == "Keep awake"
    d.keep_awake.setChecked(False)
    assert d.reading_width.currentData() == 0, "the whole width until a limit is chosen"
    d.reading_width.setCurrentIndex(d.reading_width.findData(80))
    _button(d, "Save").click()
    assert len(saved) == 1
    v = saved[0]
    assert [p.name for p in v.profiles] == ["Embedded", "Work"]
    work = v.profiles[1]
    assert (work.kind, work.url, work.token) == (
        ProfileKind.REMOTE,
        "wss://gw.example:8443",
        "s3cret",
    )
    assert (v.theme, v.send_key, v.close_to_tray) == ("dark", "ctrl_enter", True)
    assert v.keep_awake is False
    assert v.reading_width == 80
    assert original.theme == "system" and len(original.profiles) == 1


def test_provider_fallback_order_can_be_changed(qtbot: Any) -> None:
    saved: list[AppSettings] = []
    d = SettingsDialog(_values(), saved.append)
    qtbot.addWidget(d)
    page = d.providers_page
    page.provider_list.setCurrentRow(1)
    qtbot.mouseClick(_button(page, "Up provider"), Qt.MouseButton.LeftButton)
    page.model.lineEdit().clear()
    QTest.keyClicks(page.model.lineEdit(), "m2-large")
    _button(d, "Save").click()
    assert [(p.name, p.model) for p in saved[0].providers] == [
        ("backup", "m2-large"),
        ("primary", "m1"),
    ]


def test_ca_file_browse_uses_patchable_picker(qtbot: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(SettingsDialog, "pick_ca_file", classmethod(lambda cls, p: "/etc/ca.pem"))
    saved: list[AppSettings] = []
    d = SettingsDialog(_values(), saved.append)
    qtbot.addWidget(d)
    browse = _button(d, "Choose CA file")
    assert not browse.isEnabled(), "the app's own gateway has no TLS options"
    _button(d, "Add profile").click()
    d.p_kind.setCurrentIndex(d.p_kind.findData(ProfileKind.REMOTE))
    d.p_url.setText("wss://gw.example:8443")
    browse.click()
    _button(d, "Save").click()
    assert saved[0].profiles[1].ca_file == "/etc/ca.pem"
