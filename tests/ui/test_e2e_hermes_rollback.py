"""End to end on real Hermes 0.19.0, 0.20.1.2, 0.22.2 and 0.21.5, the real window driven by
clicks: a turn that wrote a file shows "1 file changed" under its reply, the card opens to the
file's diff, Review and restore shows the checkpoint's diff, and Restore this file puts the file
back on disk.

The gateway is started as the app starts a Local Hermes (HermesServeLauncher: checkpoints on),
its session directory a temp folder; the app reaches it as a Remote profile.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from desktop.app.assembly import AppPaths
from desktop.core.link.profiles import FileTokenStore, Profile, ProfileKind
from desktop.core.models import ChatMessage, Role
from desktop.ui.chat.restore_dialog import RestoreDialog
from tests.core.test_hermes_chats import NO_AUTO_TITLE
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.hermes_env import (
    HERMES_019,
    HERMES_0201,
    HERMES_0215,
    HERMES_022,
    HermesDist,
    hermes_gateway,
    line_params,
    require_hermes,
)
from tests.ui.e2e_support import App, add_profiles, until
from tests.ui.settings_support import keep_loop  # noqa: F401 (fixture)

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.usefixtures("keep_loop")]

WAIT = 180.0
TOKEN_REF = "profile:hermes:1"


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer("ok") as fake:
        yield fake


def _text(path: Path) -> str:
    """The file's text; "" while git replaces it (a restore unlinks, then writes it)."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def _click(app: App, message: ChatMessage, kind: str, n: int = 0) -> None:
    view = app.window.chat_view
    # Where the zone is now: a card that just grew (its diff arrived) is laid out again on the
    # next frame; a click at the old place landed beside the button (a full run, CI load).
    view.chat_model.flush()
    view.doItemsLayout()
    row = view.chat_model.row_of(message.id)
    assert row is not None
    index = view.chat_model.index(row)
    view.scrollTo(index)
    center = view.bubbles.zone_center(index, kind, n)
    assert center is not None, f"the reply shows {kind}"
    at = (center + view.visualRect(index).topLeft().toPointF()).toPoint()
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, at)


def _card(app: App, message: ChatMessage) -> Any:
    view = app.window.chat_view
    index = view.chat_model.index(view.chat_model.row_of(message.id))
    return view.bubbles.layout_for(index).changes


@pytest.mark.parametrize("dist", line_params(HERMES_019, HERMES_0201, HERMES_022, HERMES_0215))
async def test_the_card_shows_the_written_file_and_restore_puts_it_back(
    qloop: Any, qtbot: Any, tmp_path: Path, provider: FakeOpenAIServer, dist: HermesDist
) -> None:
    require_hermes(dist)
    work, root = tmp_path / "work", tmp_path / "app"
    work.mkdir()
    notes = work / "notes.txt"
    notes.write_text("old line\n", encoding="utf-8")
    provider.script = [
        {"tool_calls": [("read_file", {"path": str(notes)})]},
        {"tool_calls": [("write_file", {"path": str(notes), "content": "new line\n"})]},
        {"content": "Wrote it."},
    ]
    config = NO_AUTO_TITLE + f"terminal:\n  cwd: {work}\n"
    async with hermes_gateway(
        tmp_path / "home", provider.base_url, dist, config_extra=config, checkpoints=True
    ) as gw:
        FileTokenStore(AppPaths.create(str(root)).config / "tokens.json").set(TOKEN_REF, gw.token)
        add_profiles(
            root, [Profile("hermes", "Hermes", ProfileKind.REMOTE, url=gw.url, token_ref=TOKEN_REF)]
        )
        app = App.open(root, qtbot)
        try:
            win = app.window
            win.profile_combo.setCurrentIndex(win.profile_combo.findData("hermes"))
            await until(app.controllers["hermes"].is_online, "Hermes online", WAIT)
            app.type_and_send(qtbot, "change the notes")
            await until(
                lambda: any(m.text == "Wrote it." for m in app.finished_replies()), "reply", WAIT
            )
            reply = next(m for m in app.bubbles(Role.ASSISTANT) if m.text == "Wrote it.")
            assert notes.read_text(encoding="utf-8") == "new line\n"
            assert _card(app, reply).title == "1 file changed"

            _click(app, reply, "changes")
            await until(lambda: len(_card(app, reply).rows) == 1, "the card opened")
            _click(app, reply, "change_file", 0)
            await until(lambda: _card(app, reply).rows[0].diff is not None, "the file's diff")
            shown = _card(app, reply).rows[0].diff.toPlainText()
            assert "-old line" in shown and "+new line" in shown

            _click(app, reply, "restore_changes")
            await until(lambda: win.chat_view.findChild(RestoreDialog) is not None, "dialog", 10)
            dialog = win.chat_view.findChild(RestoreDialog)
            await until(dialog.restore_file.isEnabled, "the checkpoint's diff shown", 60)
            assert "+new line" in dialog.preview.toPlainText()
            QTest.mouseClick(dialog.restore_file, Qt.MouseButton.LeftButton)
            await until(lambda: _text(notes) == "old line\n", "restored", 60)
            await until(lambda: dialog.status.text().startswith("Restored"), "told", 30)
            assert (
                dialog.status.text()
                == "Restored notes.txt to checkpoint " + dialog.checkpoint()[:8]
            )
            dialog.close()
        finally:
            await app.close()
