"""Providers in Settings: presets, the model list, the Test button, renames and bad input."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from desktop.gateway.providers.config import KeyStore, read_settings
from desktop.ui.settings.values import ProviderSettings
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.settings_support import (
    click,
    closed_port,
    keep_loop,  # noqa: F401 (fixture)
    make_prefs,
    open_dialog,
    result_of,
)

pytestmark = pytest.mark.usefixtures("keep_loop")

KEY = "sk-test-provider-key"


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer("ok") as server:
        server.api_key = KEY
        server.models = ["fake-small", "fake-large"]
        yield server


def _type(qtbot: Any, edit: Any, text: str) -> None:
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClicks(edit, text)


async def test_add_from_preset_pick_model_from_list_test_and_save(
    qloop: Any, qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeOpenAIServer
) -> None:
    prefs = make_prefs(tmp_path, monkeypatch)
    dialog = open_dialog(qtbot, prefs, tmp_path)
    page = dialog.providers_page
    dialog.tabs.setCurrentWidget(page)
    click(qtbot, page, "Add provider")
    page.preset.setCurrentIndex(page.preset.findText("OpenRouter"))
    page.preset.activated.emit(page.preset.currentIndex())
    assert page.name.text() == "OpenRouter"
    assert page.base_url.text() == "https://openrouter.ai/api/v1"
    assert "openrouter.ai/keys" in page.preset_hint.text() and page.preset_hint.isVisible()
    page.preset.setCurrentIndex(page.preset.findText("Ollama (this computer)"))
    page.preset.activated.emit(page.preset.currentIndex())
    assert page.name.text() == "Ollama (this computer)", "a preset's name follows the preset"
    assert page.base_url.text() == "http://127.0.0.1:11434/v1"
    assert page.api_key.placeholderText() == "Not needed"

    # This machine runs the provider somewhere else: the user edits the URL, types the key.
    _type(qtbot, page.name, "My server")
    _type(qtbot, page.base_url, fake.base_url)
    _type(qtbot, page.api_key, KEY)
    click(qtbot, page, "Load models")
    assert await result_of(page.result) == "✓ 2 models available"
    models = [page.model.itemText(i) for i in range(page.model.count())]
    assert models == ["fake-large", "fake-small"]
    page.model.setCurrentIndex(page.model.findText("fake-small"))
    click(qtbot, page, "Test provider")
    text = await result_of(page.result)
    assert text.startswith("✓ fake-small answered in ") and text.endswith("“ok”"), text
    assert fake.requests[-1]["model"] == "fake-small", "a real request reached the provider"

    click(qtbot, dialog, "Save")
    assert not dialog.isVisible()
    (saved,) = read_settings(tmp_path)
    assert (saved.name, saved.base_url, saved.model) == ("My server", fake.base_url, "fake-small")
    # The listed models are kept with it: the chat header offers them as its model switch.
    assert saved.models == ("fake-large", "fake-small")
    assert KeyStore(tmp_path, None).get(saved.key_ref) == KEY


async def test_renaming_a_provider_keeps_its_key(
    qloop: Any, qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeOpenAIServer
) -> None:
    prefs = make_prefs(tmp_path, monkeypatch)
    values = prefs.load()
    values.providers = [ProviderSettings("Work", fake.base_url, "fake-small", KEY)]
    prefs.save(values)

    dialog = open_dialog(qtbot, prefs, tmp_path)
    page = dialog.providers_page
    dialog.tabs.setCurrentWidget(page)
    assert page.api_key.text() == "" and page.api_key.placeholderText() == "Saved; type to replace"
    _type(qtbot, page.name, "Work (renamed)")
    click(qtbot, dialog, "Save")
    assert not dialog.isVisible()

    again = open_dialog(qtbot, prefs, tmp_path)
    page = again.providers_page
    again.tabs.setCurrentWidget(page)
    assert page.provider_list.item(0).text() == "Work (renamed)"
    click(qtbot, page, "Test provider")
    assert (await result_of(page.result)).startswith("✓ fake-small answered"), "key was kept"


async def test_errors_say_their_cause(
    qloop: Any, qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeOpenAIServer
) -> None:
    prefs = make_prefs(tmp_path, monkeypatch)
    dialog = open_dialog(qtbot, prefs, tmp_path)
    page = dialog.providers_page
    dialog.tabs.setCurrentWidget(page)
    click(qtbot, page, "Add provider")
    _type(qtbot, page.base_url, fake.base_url)
    _type(qtbot, page.api_key, "sk-wrong")
    click(qtbot, page, "Load models")
    assert (await result_of(page.result)).startswith("✗ the provider refused the API key (HTTP 401")
    _type(qtbot, page.api_key, KEY)
    _type(qtbot, page.base_url, fake.base_url.removesuffix("/v1"))
    click(qtbot, page, "Load models")
    assert (await result_of(page.result)).startswith(
        "✗ no model list at this base URL: it usually ends in /v1 (HTTP 404"
    )
    _type(qtbot, page.base_url, fake.base_url)
    page.model.setEditText("gpt-9")
    fake.status = 404
    click(qtbot, page, "Test provider")
    assert (await result_of(page.result)).startswith(
        "✗ the provider does not know the model 'gpt-9' (HTTP 404"
    )
    fake.clear_faults()
    page.model.setEditText("")
    port = closed_port()
    _type(qtbot, page.base_url, f"http://127.0.0.1:{port}/v1")
    click(qtbot, page, "Test provider")
    assert await result_of(page.result) == "✗ choose a model first"
    page.model.setEditText("fake-small")
    click(qtbot, page, "Test provider")
    assert await result_of(page.result) == f"✗ cannot reach 127.0.0.1:{port}: connection refused"
    assert "Unexpected" not in page.result.text()


def test_invalid_settings_keep_the_dialog_open_with_the_field_marked(
    qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefs = make_prefs(tmp_path, monkeypatch)
    dialog = open_dialog(qtbot, prefs, tmp_path)
    with qtbot.waitActive(dialog):
        dialog.activateWindow()
    page = dialog.providers_page
    dialog.tabs.setCurrentWidget(page)
    click(qtbot, page, "Add provider")
    _type(qtbot, page.name, "Main")
    _type(qtbot, page.base_url, "api.openai.com/v1")
    page.model.setEditText("gpt-4o-mini")
    _type(qtbot, page.api_key, "sk-typed")
    click(qtbot, dialog, "Save")
    assert dialog.isVisible(), "the dialog stays open"
    assert dialog.error.isVisible() and dialog.error.text() == (
        "Not saved: Main: the base URL must be http(s)://host/…, e.g. https://api.openai.com/v1"
    )
    assert page.base_url.property("invalid") is True
    assert QApplication.focusWidget() is page.base_url
    assert page.base_url.text() == "api.openai.com/v1" and page.api_key.text() == "sk-typed"
    assert not (tmp_path / "providers.json").exists(), "nothing half-saved"

    # Two providers of one name cannot be saved either (the second is marked).
    _type(qtbot, page.base_url, "https://api.openai.com/v1")
    assert page.base_url.property("invalid") is False, "editing the field clears the mark"
    click(qtbot, page, "Add provider")
    _type(qtbot, page.name, "main")
    _type(qtbot, page.base_url, "http://127.0.0.1:1234/v1")
    page.model.setEditText("local")
    click(qtbot, dialog, "Save")
    assert dialog.isVisible() and page.provider_list.currentRow() == 1
    assert "two providers are called 'main'" in dialog.error.text()
    assert page.name.property("invalid") is True

    _type(qtbot, page.name, "Local")
    qtbot.keyClick(page.name, Qt.Key.Key_Tab)
    click(qtbot, dialog, "Save")
    assert not dialog.isVisible()
    assert [p.name for p in read_settings(tmp_path)] == ["Main", "Local"]
