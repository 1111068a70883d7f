"""The Providers page of the settings dialog: presets, the model list, and a Test button."""

from __future__ import annotations

import dataclasses
import uuid

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QLineEdit,
    QListWidget,
    QPushButton,
    QWidget,
)

from desktop.gateway.providers.presets import PRESETS, preset_for
from desktop.ui.settings import form as settings_form
from desktop.ui.settings.form import CheckRunner, clear_invalid, named
from desktop.ui.settings.values import ProviderSettings, SettingsChecks

NEW_NAME = "New provider"


class ProvidersPage(QWidget):
    """Edits `providers` in place (the dialog's copy); list order is fallback order.

    Signals:
        field_edited(QWidget): the user typed into a field that a problem may have marked.
    """

    field_edited = Signal(QWidget)

    def __init__(
        self, providers: list[ProviderSettings], checks: SettingsChecks | None, parent: QWidget
    ) -> None:
        super().__init__(parent)
        self.providers = providers
        self._checks = checks
        self._row = -1
        self.provider_list = QListWidget(self)
        named(self.provider_list, "Providers", "In fallback order: the first is tried first")
        self.provider_list.currentRowChanged.connect(self._on_provider_list_row_changed)
        buttons = []
        for text, slot in (
            ("Add", self._on_add_clicked),
            ("Remove", self._on_remove_clicked),
            ("Up", self._on_up_clicked),
            ("Down", self._on_down_clicked),
        ):
            b = named(QPushButton(text, self), f"{text} provider")
            b.clicked.connect(slot)
            buttons.append(b)
        self.preset = named(QComboBox(self), "Preset", "Fills in the base URL of a known provider")
        self.preset.addItem("Custom", None)
        for preset in PRESETS:
            self.preset.addItem(preset.name, preset)
        self.preset.activated.connect(self._on_preset_activated)
        self.name = named(QLineEdit(self), "Provider name")
        self.base_url = named(QLineEdit(self), "Base URL", "OpenAI-compatible API base URL")
        self.base_url.setPlaceholderText("https://api.example.com/v1")
        self.model = named(QComboBox(self), "Model", "Type a model name or load the list")
        self.model.setEditable(True)
        self.model.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.model.setMinimumContentsLength(18)
        self.load_models = named(
            QPushButton("Load models", self), "Load models", "Ask the provider for its models"
        )
        self.load_models.clicked.connect(self._on_load_models_clicked)
        self.api_key = named(QLineEdit(self), "API key", "Kept in the keyring; never logged")
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.test = named(QPushButton("Test", self), "Test provider", "Send one tiny request")
        self.test.clicked.connect(self._on_test_clicked)
        self.result = settings_form.result_label("Provider check result", self)
        self.preset_hint = settings_form.hint_label("", self)
        self._models_runner = CheckRunner(self.load_models, self.result, self)
        self._test_runner = CheckRunner(self.test, self.result, self)
        for edit in (self.name, self.base_url):
            edit.textEdited.connect(lambda _t, w=edit: self.field_edited.emit(w))
        model_edit = self.model.lineEdit()
        assert model_edit is not None  # the model box is editable
        model_edit.textEdited.connect(lambda _t: self.field_edited.emit(self.model))
        # A result is about what was checked: editing what it depends on takes it away.
        for edit in (self.base_url, self.api_key, model_edit):
            edit.textEdited.connect(self._on_inputs_edited)
        hint = settings_form.hint_label(
            "The first provider answers. The others take over, in order, when it cannot be "
            "reached, and it is switched back once healthy. With none, a clearly labelled "
            "offline model answers.",
            self,
        )
        model_row = settings_form.row_of(self.model, self.load_models, grow_first=True)
        test_row = settings_form.row_of(self.test, space_after=True)
        self.form = form = settings_form.form_of(
            ("Preset", self.preset),
            ("Name", self.name),
            ("Base URL", self.base_url),
            ("", self.preset_hint),
            ("API key", self.api_key),
            ("Model", model_row),
            ("", test_row),
            self.result,
            hint,
        )
        settings_form.list_beside_form(self, self.provider_list, buttons, form)
        self._load()
        self._set_form_enabled(bool(self.providers))

    # -- list -------------------------------------------------------------------------------

    def _load(self) -> None:
        settings_form.fill_list(self.provider_list, (p.name for p in self.providers))

    def store(self) -> None:
        """Write the form back into the selected provider."""
        row = self._row
        if not 0 <= row < len(self.providers):
            return
        p = self.providers[row]
        p.name = self.name.text().strip()
        p.base_url = self.base_url.text().strip()
        p.model = self.model.currentText().strip()
        p.api_key = self.api_key.text()
        item = self.provider_list.item(row)
        if item is not None:
            item.setText(p.name or "(no name)")

    def select(self, row: int) -> None:
        self.provider_list.setCurrentRow(row)

    def field(self, name: str) -> QWidget:
        """The editor of a ProviderSettings attribute (to highlight a problem)."""
        return {"name": self.name, "base_url": self.base_url, "model": self.model}[name]

    def _on_provider_list_row_changed(self, row: int) -> None:
        self.store()
        self._models_runner.cancel()
        self._test_runner.cancel()
        self._row = row
        self._set_form_enabled(0 <= row < len(self.providers))
        if not 0 <= row < len(self.providers):
            return
        p = self.providers[row]
        for widget in (self.name, self.base_url, self.model, self.api_key):
            clear_invalid(widget)
        self.name.setText(p.name)
        self.base_url.setText(p.base_url)
        self.model.clear()
        self.model.addItems(list(p.models))
        self.model.setEditText(p.model)
        self.api_key.setText(p.api_key)
        self.api_key.setPlaceholderText("Saved; type to replace" if p.id else "")
        preset = preset_for(p.base_url)
        self.preset.setCurrentIndex(self.preset.findData(preset) if preset else 0)
        self._show_preset_hint()

    def _set_form_enabled(self, enabled: bool) -> None:
        for widget in (self.preset, self.name, self.base_url, self.model, self.api_key):
            widget.setEnabled(enabled)
        self.load_models.setEnabled(enabled)
        self.test.setEnabled(enabled)

    def _on_add_clicked(self) -> None:
        self.store()
        # The id is the provider's for life: its key is kept under it, whatever its name.
        self.providers.append(ProviderSettings(NEW_NAME, "", "", id=uuid.uuid4().hex[:12]))
        self.provider_list.addItem(NEW_NAME)
        self.select(len(self.providers) - 1)
        self.api_key.setPlaceholderText("")
        self.preset.setFocus()

    def _on_remove_clicked(self) -> None:
        row = self.provider_list.currentRow()
        if 0 <= row < len(self.providers):
            self._row = -1
            del self.providers[row]
            self.provider_list.takeItem(row)

    def _move(self, delta: int) -> None:
        self.store()
        row = self.provider_list.currentRow()
        new = row + delta
        items = self.providers
        if 0 <= row < len(items) and 0 <= new < len(items):
            items[row], items[new] = items[new], items[row]
            self._row = -1
            self._load()
            self.select(new)

    def _on_up_clicked(self) -> None:
        self._move(-1)

    def _on_down_clicked(self) -> None:
        self._move(1)

    # -- presets, models, test --------------------------------------------------------------

    def _on_inputs_edited(self, _text: str) -> None:
        self._models_runner.cancel()
        self._test_runner.cancel()

    def _on_preset_activated(self, _index: int) -> None:
        preset = self.preset.currentData()
        if preset is None:
            self._show_preset_hint()
            return
        old = self.name.text().strip()
        if not old or old == NEW_NAME or any(old == p.name for p in PRESETS):
            self.name.setText(preset.name)
        self.base_url.setText(preset.base_url)
        clear_invalid(self.base_url)
        self.store()
        self._show_preset_hint()

    def _show_preset_hint(self) -> None:
        preset = self.preset.currentData()
        self.preset_hint.setText(preset.hint if preset is not None else "")
        self.preset_hint.setVisible(preset is not None)
        if preset is not None and not preset.needs_key and not self.api_key.text():
            self.api_key.setPlaceholderText("Not needed")

    def current(self) -> ProviderSettings | None:
        """A copy of the selected provider as edited so far (what a check runs against)."""
        self.store()
        row = self._row
        return dataclasses.replace(self.providers[row]) if 0 <= row < len(self.providers) else None

    def _on_load_models_clicked(self) -> None:
        provider, checks = self.current(), self._checks
        if provider is None or checks is None:
            return

        row = self._row

        def loaded(models: list[str]) -> str:
            if 0 <= row < len(self.providers):
                # Kept with the provider: the chat header's model switch offers them.
                self.providers[row].models = tuple(models)
            typed = self.model.currentText()
            self.model.clear()
            self.model.addItems(models)
            self.model.setEditText(typed or models[0])
            if not typed:
                self.store()
            return f"{len(models)} model{'s' if len(models) != 1 else ''} available"

        self._models_runner.run(lambda: checks.list_models(provider), "Loading models…", loaded)

    def _on_test_clicked(self) -> None:
        provider, checks = self.current(), self._checks
        if provider is None or checks is None:
            return
        self._test_runner.run(lambda: checks.test_provider(provider), "Testing…", str)

    def shutdown(self) -> None:
        self._models_runner.cancel()
        self._test_runner.cancel()
