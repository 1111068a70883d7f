"""The settings dialog: profiles, embedded-gateway providers, theme, send key, tray."""

from __future__ import annotations

import copy
import dataclasses
import shutil
import uuid
from collections.abc import Callable

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QLabel,
    QLayout,
    QLineEdit,
    QListWidget,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from desktop.core.link.launcher import default_hermes_home
from desktop.core.link.profiles import ProfileKind
from desktop.ui.settings import form as settings_form
from desktop.ui.settings.form import CheckRunner, clear_invalid, mark_invalid, named, show_result
from desktop.ui.settings.providers import ProvidersPage
from desktop.ui.settings.values import (
    AppSettings,
    Problem,
    ProfileSettings,
    SettingsChecks,
    problems,
)

# The reading-width choices: what the list says, and about how many characters a line holds.
READING_WIDTHS = (
    ("As wide as the window", 0),
    ("Wide (about 100 characters)", 100),
    ("Comfortable (about 80 characters)", 80),
    ("Narrow (about 64 characters)", 64),
)

_KIND_LABELS = {
    ProfileKind.EMBEDDED: "Embedded gateway",
    ProfileKind.LOCAL_HERMES: "Local Hermes",
    ProfileKind.REMOTE: "Remote URL",
}
URL_HINT = (
    "The gateway's WebSocket address, e.g. wss://host:8443/api/ws. Plain ws:// only to this "
    "computer, or to a host you allow below."
)
_named = named


class SettingsDialog(QDialog):
    """Edits a copy of AppSettings; `on_save` receives the result when the user clicks Save.

    Settings that cannot work keep the dialog open, with the field outlined and the reason
    shown; nothing typed is lost. `checks` runs the Load models / Test buttons (None: hidden).
    """

    def __init__(
        self,
        values: AppSettings,
        on_save: Callable[[AppSettings], None],
        parent: QWidget | None = None,
        checks: SettingsChecks | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.setAccessibleName("Settings")
        self.values = copy.deepcopy(values)
        self._on_save = on_save
        self._checks = checks
        self._profile_row = -1
        self.tabs = tabs = QTabWidget(self)
        tabs.setAccessibleName("Settings sections")
        tabs.addTab(self._profiles_tab(), "Profiles")
        self.providers_page = ProvidersPage(self.values.providers, checks, self)
        self.providers_page.field_edited.connect(self._on_flagged_edited)
        tabs.addTab(self.providers_page, "Providers")
        tabs.addTab(self._general_tab(), "General")
        self.error = named(QLabel(self), "Settings problem")
        self.error.setWordWrap(True)
        self.error.setVisible(False)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, self
        )
        for b in buttons.buttons():
            b.setAccessibleName(b.text().replace("&", ""))
        buttons.accepted.connect(self._on_buttons_accepted)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(tabs)
        lay.addWidget(self.error)
        lay.addWidget(buttons)
        self._load_profiles()
        for check in (self.test_profile, self.providers_page.load_models, self.providers_page.test):
            check.setVisible(checks is not None)
        self.resize(680, 500)

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
        self.p_url = _named(QLineEdit(page), "Gateway URL", URL_HINT)
        self.p_url.setPlaceholderText("wss://host:port/api/ws")
        self.p_url_hint = settings_form.hint_label(URL_HINT, page)
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
        self.p_home = _named(
            QLineEdit(page), "Hermes home", "Where Hermes keeps its config, keys and sessions"
        )
        self.p_home.setPlaceholderText(f"{default_hermes_home()} (your Hermes)")
        self.p_hermes = _named(QLineEdit(page), "Hermes program", "The hermes executable")
        found = shutil.which("hermes")
        self.p_hermes.setPlaceholderText(found or "not found on PATH: choose it")
        self.p_hermes_browse = _named(QPushButton("Browse…", page), "Choose the hermes program")
        self.p_hermes_browse.clicked.connect(self._on_browse_hermes_clicked)
        self.test_profile = _named(
            QPushButton("Test connection", page), "Test connection", "Connect once and disconnect"
        )
        self.test_profile.clicked.connect(self._on_test_profile_clicked)
        self.p_result = settings_form.result_label("Connection test result", page)
        self._profile_runner = CheckRunner(self.test_profile, self.p_result, self)
        for edit in (self.p_name, self.p_url, self.p_hermes):
            edit.textEdited.connect(lambda _t, w=edit: self._on_flagged_edited(w))
        # A result is about what was tested: editing what it depends on takes it away.
        for edit in (self.p_url, self.p_token, self.p_home, self.p_hermes):
            edit.textEdited.connect(lambda _t: self._profile_runner.cancel())
        ca_row = settings_form.row_of(self.p_ca, browse)
        hermes_row = settings_form.row_of(self.p_hermes, self.p_hermes_browse)
        test_row = settings_form.row_of(self.test_profile, space_after=True)
        self.p_form = form = settings_form.form_of(
            ("Name", self.p_name),
            ("Kind", self.p_kind),
            ("URL", self.p_url),
            ("", self.p_url_hint),
            ("Token", self.p_token),
            ("CA file", ca_row),
            ("", self.p_insecure),
            ("Hermes home", self.p_home),
            ("Hermes program", hermes_row),
            ("", test_row),
            self.p_result,
        )
        self._remote_rows: list[QWidget | QLayout] = [
            self.p_url,
            self.p_url_hint,
            self.p_token,
            ca_row,
            self.p_insecure,
        ]
        self._hermes_rows: list[QWidget | QLayout] = [self.p_home, hermes_row]
        unreadable = self.values.unreadable_profiles
        self.unreadable_note = settings_form.hint_label(
            (
                f"{len(unreadable)} saved profile{'s' if len(unreadable) != 1 else ''} "
                "cannot be used by this version and stay in profiles.json as they are:\n"
                + "\n".join(f"• {label}" for label in unreadable)
            ),
            page,
        )
        self.unreadable_note.setAccessibleName("Unreadable profiles")
        self.unreadable_note.setVisible(bool(unreadable))
        settings_form.list_beside_form(
            page, self.profile_list, (add, remove), form, self.unreadable_note
        )
        return page

    def _load_profiles(self) -> None:
        settings_form.fill_list(self.profile_list, (p.name for p in self.values.profiles))

    def _store_profile(self) -> None:
        row = self._profile_row
        if not 0 <= row < len(self.values.profiles):
            return
        p = self.values.profiles[row]
        p.name = self.p_name.text().strip()
        p.kind = self.p_kind.currentData()
        p.url = self.p_url.text().strip()
        p.token = self.p_token.text()
        p.ca_file = self.p_ca.text().strip()
        p.allow_insecure_ws = self.p_insecure.isChecked()
        p.hermes_home = self.p_home.text().strip()
        p.hermes_path = self.p_hermes.text().strip()
        item = self.profile_list.item(row)
        if item is not None:
            item.setText(p.name or "(no name)")

    def _on_profile_list_row_changed(self, row: int) -> None:
        self._store_profile()
        self._profile_runner.cancel()
        self._profile_row = row
        if not 0 <= row < len(self.values.profiles):
            return
        p = self.values.profiles[row]
        for widget in (self.p_name, self.p_url, self.p_hermes):
            clear_invalid(widget)
        self.p_home.setText(p.hermes_home)
        self.p_hermes.setText(p.hermes_path)
        self.p_name.setText(p.name)
        self.p_kind.setCurrentIndex(list(_KIND_LABELS).index(p.kind))
        self.p_url.setText(p.url)
        self.p_token.setText(p.token)
        self.p_ca.setText(p.ca_file)
        self.p_insecure.setChecked(p.allow_insecure_ws)
        self._on_kind_changed()

    def _on_kind_changed(self, _index: int = 0) -> None:
        """Only a remote profile has a URL, a token and TLS options; the app's own is permanent."""
        kind = self.p_kind.currentData()
        remote = kind is ProfileKind.REMOTE
        for widget in (self.p_url, self.p_token, self.p_ca, self.p_browse, self.p_insecure):
            widget.setEnabled(remote)
        for row in self._remote_rows:
            _show_row(self.p_form, row, remote)
        for row in self._hermes_rows:
            _show_row(self.p_form, row, kind is ProfileKind.LOCAL_HERMES)
        self.test_profile.setEnabled(kind is not ProfileKind.EMBEDDED)
        embedded = kind is ProfileKind.EMBEDDED
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

    @classmethod
    def pick_hermes_program(cls, parent: QWidget) -> str:
        """Ask for the hermes executable (patchable in tests)."""
        path, _ = QFileDialog.getOpenFileName(parent, "The hermes program", "", "hermes (hermes*)")
        return str(path)

    def _on_browse_hermes_clicked(self) -> None:
        path = self.pick_hermes_program(self)
        if path:
            self.p_hermes.setText(path)
            clear_invalid(self.p_hermes)

    def _on_test_profile_clicked(self) -> None:
        self._store_profile()
        row, checks = self._profile_row, self._checks
        if checks is None or not 0 <= row < len(self.values.profiles):
            return
        profile = dataclasses.replace(self.values.profiles[row])
        # The URL is checked here first: a malformed one is named at once, with no socket opened.
        for problem in problems(AppSettings(profiles=[profile])):
            if problem.field in {"url", "hermes_path"}:
                widget = self.p_url if problem.field == "url" else self.p_hermes
                mark_invalid(widget, problem.message)
                show_result(self.p_result, False, problem.message)
                return
        busy = (
            "Starting hermes and connecting…"
            if profile.kind is ProfileKind.LOCAL_HERMES
            else "Connecting…"
        )
        self._profile_runner.run(lambda: checks.test_profile(profile), busy, str)

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
        self.reading_width = QComboBox(page)
        _named(self.reading_width, "Reading width", "How wide the conversation's lines may grow")
        for label, chars in READING_WIDTHS:
            self.reading_width.addItem(label, chars)
        found = self.reading_width.findData(self.values.reading_width)
        self.reading_width.setCurrentIndex(max(0, found))
        self.notifications = QCheckBox("Notify when a reply finishes in the background", page)
        _named(self.notifications, "Notifications")
        self.notifications.setChecked(self.values.notifications)
        self.close_to_tray = QCheckBox("Closing the window keeps the app in the tray", page)
        _named(self.close_to_tray, "Close to tray")
        self.close_to_tray.setChecked(self.values.close_to_tray)
        self.keep_awake = QCheckBox("Keep the computer awake while a reply runs (up to 2 h)", page)
        _named(self.keep_awake, "Keep awake", "Stops the computer sleeping until the reply ends")
        self.keep_awake.setChecked(self.values.keep_awake)
        form = QFormLayout(page)
        form.addRow("Theme", self.theme)
        form.addRow("Send key", self.send_key)
        form.addRow("Reading width", self.reading_width)
        form.addRow("", self.notifications)
        form.addRow("", self.close_to_tray)
        form.addRow("", self.keep_awake)
        return page

    def collect(self) -> AppSettings:
        """The edited values (also what `on_save` receives)."""
        self._store_profile()
        self.providers_page.store()
        self.values.theme = str(self.theme.currentData())
        self.values.send_key = str(self.send_key.currentData())
        self.values.reading_width = int(self.reading_width.currentData())
        self.values.notifications = self.notifications.isChecked()
        self.values.close_to_tray = self.close_to_tray.isChecked()
        self.values.keep_awake = self.keep_awake.isChecked()
        return copy.deepcopy(self.values)

    def _on_buttons_accepted(self) -> None:
        values = self.collect()
        found = problems(values)
        if found:
            self._show_problem(found[0])
            return
        self.error.setVisible(False)
        self._on_save(values)
        self.accept()

    def _show_problem(self, problem: Problem) -> None:
        """Bring the row and field into view, outline it, and say what is wrong."""
        if problem.section == "profiles":
            self.tabs.setCurrentIndex(0)
            self.profile_list.setCurrentRow(problem.row)
            widget: QWidget = {
                "name": self.p_name,
                "url": self.p_url,
                "hermes_path": self.p_hermes,
            }[problem.field]
            where = self.values.profiles[problem.row].name or "a profile"
        else:
            self.tabs.setCurrentIndex(1)
            self.providers_page.select(problem.row)
            widget = self.providers_page.field(problem.field)
            where = self.values.providers[problem.row].name or "a provider"
        text = f"Not saved: {where}: {problem.message}"
        self.error.setText(text)
        self.error.setStyleSheet("color: #c62828;")
        self.error.setVisible(True)
        mark_invalid(widget, problem.message)

    def _on_flagged_edited(self, widget: QWidget) -> None:
        """The user is fixing a field: the mark and the "Not saved" line go (Save re-checks)."""
        if widget.property("invalid"):
            self.error.setVisible(False)
        clear_invalid(widget)

    def done(self, result: int) -> None:
        # A check still running must not land on a closed dialog.
        self._profile_runner.cancel()
        self.providers_page.shutdown()
        super().done(result)


def _show_row(form: QFormLayout, row: QWidget | QLayout, visible: bool) -> None:
    # Two overloads, one per kind of field: the stubs take no union.
    if isinstance(row, QWidget):
        form.setRowVisible(row, visible)
    else:
        form.setRowVisible(row, visible)
