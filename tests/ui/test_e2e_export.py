"""End to end: a conversation exported from the window to Markdown and to JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QWidget

from desktop.ui.window.chat_admin import Dialogs
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.e2e_support import App, until, use_fake_provider

pytestmark = pytest.mark.slow

REPLY = "| planet | moons |\n|---|---|\n| Mars | 2 |\n\nAnd ~~Pluto~~ is a dwarf."


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(REPLY, chunk_size=8) as fake:
        yield fake


async def test_a_chat_exports_to_markdown_and_to_json_with_everything_kept(
    qloop: Any,
    qtbot: Any,
    tmp_path: Path,
    provider: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_fake_provider(tmp_path / "app", provider.base_url)
    app = App.open(tmp_path / "app", qtbot)
    asked: list[str] = []
    target: list[Path] = []

    def ask(cls: Any, parent: QWidget, suggested: str) -> str:
        asked.append(suggested)
        return str(target[0])

    monkeypatch.setattr(Dialogs, "ask_save_path", classmethod(ask))
    try:
        await app.wait_online()
        app.type_and_send(qtbot, "How many moons has Mars?")
        await until(lambda: len(app.finished_replies()) == 1, "the reply finished")
        await until(lambda: app.user_confirmed("How many moons has Mars?"), "prompt confirmed")
        win = app.window
        await until(
            lambda: (
                (s := win.session_model.session(win.session_key or "")) is not None
                and s.title == "How many moons has Mars?"
            ),
            "the chat has its title",
        )
        target.append(tmp_path / "mars.md")
        QTest.keySequence(win, "Ctrl+Shift+S")
        assert asked == [str(Path.home() / "How many moons has Mars.md")]
        markdown = (tmp_path / "mars.md").read_text("utf-8")
        assert markdown.startswith("# How many moons has Mars?\n")
        assert "### You" in markdown and "How many moons has Mars?" in markdown
        assert "### Assistant" in markdown and REPLY in markdown
        assert win.status_message() == f"Exported to {tmp_path / 'mars.md'}"
        target[0] = tmp_path / "mars.json"
        QTest.keySequence(win, "Ctrl+Shift+S")
        data = json.loads((tmp_path / "mars.json").read_text("utf-8"))
        assert data["format"] == "hermes-qt.conversation"
        assert data["session"]["title"] == "How many moons has Mars?"
        assert data["session"]["key"] == win.session_key
        assert [(m["role"], m["text"]) for m in data["messages"]] == [
            ("user", "How many moons has Mars?"),
            ("assistant", REPLY),
        ]
        assert {"idx", "thinking", "created_at", "status", "extra"} <= set(data["messages"][1])
        # A folder that cannot be written is reported, not raised.
        target[0] = tmp_path / "mars.md" / "inside-a-file.md"
        QTest.keySequence(win, "Ctrl+Shift+S")
        assert win.status_message().startswith("Export failed: could not write")
    finally:
        await app.close()
