"""The settings dialog: profiles, embedded-gateway providers, theme, send key, tray."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from typing import TypeVar

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from desktop.ui.settings_values import AppSettings, ProfileKind, ProfileSettings, ProviderSettings

_KIND_LABELS = {
    ProfileKind.EMBEDDED: "Embedded gateway",
    ProfileKind.LOCAL_HERMES: "Local Hermes",
    ProfileKind.REMOTE: "Remote URL",
}


_W = TypeVar("_W", bound=QWidget)


def _named(widget: _W, name: str, description: str = "") -> _W:
    widget.setAccessibleName(name)
    if description:
        widget.setAccessibleDescription(description)
    return widget


class SettingsDialog(QDialog):
    """Edits a copy of AppSettings; `on_save` receives the result when the user clicks Save."""

    def __init__(
        self,
        values: AppSettings,
        on_save: Callable[[AppSettings], None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.setAccessibleName("Settings")
        self.values = copy.deepcopy(values)
        self._on_save = on_save
        self._profile_row = -1
        self._provider_row = -1
        tabs = QTabWidget(self)
        tabs.setAccessibleName("Settings sections")
        tabs.addTab(self._profiles_tab(), "Profiles")
        tabs.addTab(self._providers_tab(), "Providers")
        tabs.addTab(self._general_tab(), "General")
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, self
        )
        for b in buttons.buttons():
            b.setAccessibleName(b.text().replace("&", ""))
        buttons.accepted.connect(self._on_buttons_accepted)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(tabs)
        lay.addWidget(buttons)
        self._load_profiles()
        self._load_providers()
        self.resize(620, 460)

    # -- profiles ---------------------------------------------------------------------------

    def _profiles_tab(self) -> QWidget:
        page = QWidget(self)
        self.profile_list = QListWidget(page)
        _named(self.profile_list, "Profiles", "Connection profiles")
        self.profile_list.currentRowChanged.connect(self._on_profile_list_row_changed)
        add = _named(QPushButton("Add", page), "Add profile")
        remove = _named(QPushButton("Remove", page), "Remove profile")
        add.clicked.connect(self._on_add_profile_clicked)
        remove.clicked.connect(self._on_remove_profile_clicked)
        self.p_remove = remove
        self.p_name = _named(QLineEdit(page), "Profile name")
        self.p_kind = QComboBox(page)
        _named(self.p_kind, "Profile kind", "Embedded gateway, local Hermes or remote URL")
        for kind, label in _KIND_LABELS.items():
            self.p_kind.addItem(label, kind)
        self.p_kind.currentIndexChanged.connect(self._on_kind_changed)
        self.p_url = _named(QLineEdit(page), "Gateway URL", "ws:// or wss:// address")
        self.p_token = _named(QLineEdit(page), "Token", "Sent to the gateway; kept in the keyring")
        self.p_token.setEchoMode(QLineEdit.EchoMode.Password)
        self.p_token.setPlaceholderText("Saved; type to replace")
        self.p_ca = _named(QLineEdit(page), "CA file", "Certificate authority for wss://")
        browse = _named(QPushButton("Browse…", page), "Choose CA file")
        browse.clicked.connect(self._on_browse_ca_clicked)
        self.p_browse = browse
        self.p_insecure = _named(
            QCheckBox("Allow unencrypted ws:// to other hosts", page),
            "Allow insecure ws",
            "Sends the token in clear text; only for trusted networks",
        )
        ca_row = QHBoxLayout()
        ca_row.addWidget(self.p_ca)
        ca_row.addWidget(browse)
        form = QFormLayout()
        form.addRow("Name", self.p_name)
        form.addRow("Kind", self.p_kind)
        form.addRow("URL", self.p_url)
        form.addRow("Token", self.p_token)
        form.addRow("CA file", ca_row)
        form.addRow("", self.p_insecure)
        left = QVBoxLayout()
        left.addWidget(self.profile_list)
        row = QHBoxLayout()
        row.addWidget(add)
        row.addWidget(remove)
        left.addLayout(row)
        lay = QHBoxLayout(page)
        lay.addLayout(left, 1)
        lay.addLayout(form, 2)
        return page

    def _load_profiles(self) -> None:
        self.profile_list.clear()
        for p in self.values.profiles:
            self.profile_list.addItem(p.name)
        if self.values.profiles:
            self.profile_list.setCurrentRow(0)

    def _store_profile(self) -> None:
        row = self._profile_row
        if not 0 <= row < len(self.values.profiles):
            return
        p = self.values.profiles[row]
        p.name = self.p_name.text().strip() or p.name
        p.kind = self.p_kind.currentData()
        p.url = self.p_url.text().strip()
        p.token = self.p_token.text()
        p.ca_file = self.p_ca.text().strip()
        p.allow_insecure_ws = self.p_insecure.isChecked()
        item = self.profile_list.item(row)
        if item is not None:
            item.setText(p.name)

    def _on_profile_list_row_changed(self, row: int) -> None:
        self._store_profile()
        self._profile_row = row
        if not 0 <= row < len(self.values.profiles):
            return
        p = self.values.profiles[row]
        self.p_name.setText(p.name)
        self.p_kind.setCurrentIndex(list(_KIND_LABELS).index(p.kind))
        self.p_url.setText(p.url)
        self.p_token.setText(p.token)
        self.p_ca.setText(p.ca_file)
        self.p_insecure.setChecked(p.allow_insecure_ws)
        self._on_kind_changed()

    def _on_kind_changed(self, _index: int = 0) -> None:
        """Only a remote profile has a URL, a token and TLS options; the app's own is permanent."""
        remote = self.p_kind.currentData() is ProfileKind.REMOTE
        for widget in (self.p_url, self.p_token, self.p_ca, self.p_browse, self.p_insecure):
            widget.setEnabled(remote)
        embedded = self.p_kind.currentData() is ProfileKind.EMBEDDED
        self.p_remove.setEnabled(not embedded)
        self.p_kind.setEnabled(not embedded or self._embedded_count() > 1)

    def _embedded_count(self) -> int:
        return sum(1 for p in self.values.profiles if p.kind is ProfileKind.EMBEDDED)

    def _on_add_profile_clicked(self) -> None:
        self._store_profile()
        self.values.profiles.append(
            ProfileSettings(id=uuid.uuid4().hex[:12], name="New profile", kind=ProfileKind.REMOTE)
        )
        self.profile_list.addItem("New profile")
        self.profile_list.setCurrentRow(len(self.values.profiles) - 1)

    def _on_remove_profile_clicked(self) -> None:
        row = self.profile_list.currentRow()
        if 0 <= row < len(self.values.profiles):
            self._profile_row = -1
            del self.values.profiles[row]
            self.profile_list.takeItem(row)

    @classmethod
    def pick_ca_file(cls, parent: QWidget) -> str:
        """Ask for a CA bundle file (patchable in tests)."""
        path, _ = QFileDialog.getOpenFileName(parent, "CA file", "", "Certificates (*.pem *.crt)")
        return str(path)

    def _on_browse_ca_clicked(self) -> None:
        path = self.pick_ca_file(self)
        if path:
            self.p_ca.setText(path)

    # -- providers --------------------------------------------------------------------------

    def _providers_tab(self) -> QWidget:
        page = QWidget(self)
        self.provider_list = QListWidget(page)
        _named(self.provider_list, "Providers", "In fallback order: the first is tried first")
        self.provider_list.currentRowChanged.connect(self._on_provider_list_row_changed)
        buttons = []
        for text, slot in (
            ("Add", self._on_add_provider_clicked),
            ("Remove", self._on_remove_provider_clicked),
            ("Up", self._on_provider_up_clicked),
            ("Down", self._on_provider_down_clicked),
        ):
            b = _named(QPushButton(text, page), f"{text} provider")
            b.clicked.connect(slot)
            buttons.append(b)
        self.v_name = _named(QLineEdit(page), "Provider name")
        self.v_url = _named(QLineEdit(page), "Base URL", "OpenAI-compatible API base URL")
        self.v_model = _named(QLineEdit(page), "Model")
        self.v_key = _named(QLineEdit(page), "API key", "Kept in the keyring; never logged")
        self.v_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.v_key.setPlaceholderText("Saved; type to replace")
        hint = QLabel(
            "The first provider answers. The others take over, in order, when it cannot be "
            "reached, and it is switched back once healthy. With none, a clearly labelled "
            "offline model answers.",
            page,
        )
        hint.setWordWrap(True)
        hint.setObjectName("settingsHint")
        form = QFormLayout()
        form.addRow("Name", self.v_name)
        form.addRow("Base URL", self.v_url)
        form.addRow("Model", self.v_model)
        form.addRow("API key", self.v_key)
        form.addRow(hint)
        left = QVBoxLayout()
        left.addWidget(self.provider_list)
        row = QHBoxLayout()
        for b in buttons:
            row.addWidget(b)
        left.addLayout(row)
        lay = QHBoxLayout(page)
        lay.addLayout(left, 1)
        lay.addLayout(form, 2)
        return page

    def _load_providers(self) -> None:
        self.provider_list.clear()
        for p in self.values.providers:
            self.provider_list.addItem(p.name)
        if self.values.providers:
            self.provider_list.setCurrentRow(0)

    def _store_provider(self) -> None:
        row = self._provider_row
        if not 0 <= row < len(self.values.providers):
            return
        p = self.values.providers[row]
        p.name = self.v_name.text().strip() or p.name
        p.base_url = self.v_url.text().strip()
        p.model = self.v_model.text().strip()
        p.api_key = self.v_key.text()
        item = self.provider_list.item(row)
        if item is not None:
            item.setText(p.name)

    def _on_provider_list_row_changed(self, row: int) -> None:
        self._store_provider()
        self._provider_row = row
        if not 0 <= row < len(self.values.providers):
            return
        p = self.values.providers[row]
        self.v_name.setText(p.name)
        self.v_url.setText(p.base_url)
        self.v_model.setText(p.model)
        self.v_key.setText(p.api_key)

    def _on_add_provider_clicked(self) -> None:
        self._store_provider()
        self.values.providers.append(ProviderSettings("New provider", "https://", ""))
        self.provider_list.addItem("New provider")
        self.provider_list.setCurrentRow(len(self.values.providers) - 1)

    def _on_remove_provider_clicked(self) -> None:
        row = self.provider_list.currentRow()
        if 0 <= row < len(self.values.providers):
            self._provider_row = -1
            del self.values.providers[row]
            self.provider_list.takeItem(row)

    def _move_provider(self, delta: int) -> None:
        self._store_provider()
        row = self.provider_list.currentRow()
        new = row + delta
        items = self.values.providers
        if 0 <= row < len(items) and 0 <= new < len(items):
            items[row], items[new] = items[new], items[row]
            self._provider_row = -1
            self._load_providers()
            self.provider_list.setCurrentRow(new)

    def _on_provider_up_clicked(self) -> None:
        self._move_provider(-1)

    def _on_provider_down_clicked(self) -> None:
        self._move_provider(1)

    # -- general ----------------------------------------------------------------------------

    def _general_tab(self) -> QWidget:
        page = QWidget(self)
        self.theme = QComboBox(page)
        _named(self.theme, "Theme", "Light, dark, or follow the system")
        for label, value in (("Follow system", "system"), ("Light", "light"), ("Dark", "dark")):
            self.theme.addItem(label, value)
        self.theme.setCurrentIndex(max(0, self.theme.findData(self.values.theme)))
        self.send_key = QComboBox(page)
        _named(self.send_key, "Send key", "Which key sends a message")
        self.send_key.addItem("Enter sends, Shift+Enter new line", "enter")
        self.send_key.addItem("Ctrl+Enter sends, Enter new line", "ctrl_enter")
        self.send_key.setCurrentIndex(max(0, self.send_key.findData(self.values.send_key)))
        self.notifications = QCheckBox("Notify when a reply finishes in the background", page)
        _named(self.notifications, "Notifications")
        self.notifications.setChecked(self.values.notifications)
        self.close_to_tray = QCheckBox("Closing the window keeps the app in the tray", page)
        _named(self.close_to_tray, "Close to tray")
        self.close_to_tray.setChecked(self.values.close_to_tray)
        form = QFormLayout(page)
        form.addRow("Theme", self.theme)
        form.addRow("Send key", self.send_key)
        form.addRow("", self.notifications)
        form.addRow("", self.close_to_tray)
        return page

    def collect(self) -> AppSettings:
        """The edited values (also what `on_save` receives)."""
        self._store_profile()
        self._store_provider()
        self.values.theme = str(self.theme.currentData())
        self.values.send_key = str(self.send_key.currentData())
        self.values.notifications = self.notifications.isChecked()
        self.values.close_to_tray = self.close_to_tray.isChecked()
        return copy.deepcopy(self.values)

    def _on_buttons_accepted(self) -> None:
        self._on_save(self.collect())
        self.accept()
