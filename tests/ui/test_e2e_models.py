"""End to end: the header names the model the next reply will use, switches it on the embedded
gateway, follows a provider change without a restart, and each footer names its model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop.app.assembly import AppPaths
from desktop.gateway.providers.config import ProviderSettings
from desktop.gateway.providers.registry import save_providers
from desktop.ui.render.usage import footer_text
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.e2e_support import App, until

pytestmark = pytest.mark.slow


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer("Answered.", chunk_size=4) as fake:
        yield fake


def _providers(root: Path, base_url: str, *models: str) -> None:
    config = AppPaths.create(str(root)).config
    save_providers(
        config, [ProviderSettings("Fake", base_url, models[0], idle_timeout=30.0, models=models)]
    )


def _header(app: App) -> str:
    label = app.window.model_label
    return label.text() if label.isVisible() else ""


def _menu(app: App) -> list[str]:
    menu = app.window.model_label.menu()
    return [a.text() for a in menu.actions()] if menu is not None else []


async def test_the_header_switches_the_model_and_the_footer_names_it(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    _providers(tmp_path, provider.base_url, "small", "large")
    app = App.open(tmp_path, qtbot)
    try:
        await app.wait_online()
        app.type_and_send(qtbot, "first")
        await until(lambda: len(app.finished_replies()) == 1, "the first reply")
        await until(lambda: _header(app) == "small · Fake", "the header names the model")
        await until(lambda: len(_menu(app)) == 2, "both models offered")
        assert provider.requests[-1]["model"] == "small"
        assert footer_text(app.finished_replies()[0]).startswith("small · ")
        menu = app.window.model_label.menu()
        assert menu is not None
        large = next(a for a in menu.actions() if a.text().startswith("large"))
        large.trigger()  # the user picks the other model in the header's menu
        await until(lambda: _header(app) == "large · Fake", "the header follows the switch")
        app.type_and_send(qtbot, "second")
        await until(lambda: len(app.finished_replies()) == 2, "the second reply")
        assert provider.requests[-1]["model"] == "large"
        replies = app.finished_replies()
        assert footer_text(replies[1]).startswith("large · ")
        assert footer_text(replies[0]).startswith("small · "), "each footer keeps its own model"
    finally:
        await app.close()


async def test_a_provider_added_while_running_shows_in_the_header_at_once(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer
) -> None:
    app = App.open(tmp_path, qtbot)
    try:
        await app.wait_online()
        app.type_and_send(qtbot, "hello")
        await until(lambda: len(app.finished_replies()) == 1, "the offline model's reply")
        await until(
            lambda: _header(app) == "built-in model · no provider set",
            "the header says no provider is set",
        )
        _providers(tmp_path, provider.base_url, "fresh")  # Settings saved a provider
        for controller in app.controllers.values():
            controller.reload_models()  # what saving Settings does in the app
        await until(lambda: _header(app) == "fresh · Fake", "the header names the new model")
    finally:
        await app.close()
