"""End to end on the embedded gateway: follow-ups typed while a reply runs are rows above the
composer that the keyboard can move, cancel and take back to edit (Steer is not offered: the
embedded gateway has no session.steer, and says so in its ready frame); they
survive a restart and each goes out as its own turn afterwards."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton

from desktop.core.models import Role
from desktop.core.profile.agent.steering import NOT_SERVED
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.e2e_support import App, until, use_fake_provider

pytestmark = pytest.mark.slow


def rows(app: App) -> list[str]:
    shown = app.window.queued_rows
    return [r.label.text() for r in shown.rows] if shown.isVisible() else []


def press(qtbot: Any, button: QToolButton) -> None:
    """As a keyboard user does: focus it, press Space."""
    button.setFocus(Qt.FocusReason.TabFocusReason)
    assert button.hasFocus() and button.isVisible() and button.accessibleName()
    qtbot.keyClick(button, Qt.Key.Key_Space)


def button(app: App, text: str, kind: str) -> QToolButton:
    row = next(r for r in app.window.queued_rows.rows if r.label.text() == text)
    return row.buttons[kind]


async def test_queued_rows_are_moved_cancelled_edited_steered_and_kept_over_a_restart(
    qloop: Any, qtbot: Any, tmp_path: Path
) -> None:
    gate = threading.Event()
    with FakeOpenAIServer("done") as provider:
        provider.script = [{"content": "the long reply", "gate": gate}]
        use_fake_provider(tmp_path, provider.base_url)
        app = App.open(tmp_path, qtbot)
        try:
            await app.wait_online()
            app.type_and_send(qtbot, "first")
            await until(lambda: app.window.composer.running, "the reply runs")
            await until(lambda: bool(provider.requests), "the reply asked of the provider")
            for text in ("a", "b", "c"):
                app.type_and_send(qtbot, text)
            await until(lambda: rows(app) == ["a", "b", "c"], "three queued rows")
            press(qtbot, button(app, "c", "up"))
            await until(lambda: rows(app) == ["a", "c", "b"], "c moved up")
            press(qtbot, button(app, "c", "up"))
            await until(lambda: rows(app) == ["c", "a", "b"], "c at the top")
            press(qtbot, button(app, "b", "cancel"))
            await until(lambda: rows(app) == ["c", "a"], "b cancelled")
            press(qtbot, button(app, "a", "edit"))
            await until(lambda: rows(app) == ["c"], "a taken back")
            assert app.window.composer.edit.toPlainText() == "a"
            app.window.composer.clear()
            # The embedded gateway has no session.steer (its ready frame lists what it
            # serves): the row offers no Steer from the start, and says why.
            assert not button(app, "c", "steer").isVisibleTo(app.window)
            assert NOT_SERVED in app.window.queued_rows.rows[0].toolTip()
        finally:
            await app.close()
        assert provider.requests and not gate.is_set()  # closed while the reply still ran

        app = App.open(tmp_path, qtbot, start=False)  # the app again: c is still queued
        try:
            print(
                "DBG",
                app.window.session_key,
                app.core.outbox.entries() if hasattr(app.core, "outbox") else None,
                [app.embedded.queued(k) for k in [app.window.session_key] if k],
            )
            await until(lambda: rows(app) == ["c"], "c queued after the restart")
            gate.set()
            provider.script = []
            for controller in app.controllers.values():
                controller.start()
            await until(
                lambda: (
                    [m.text for m in app.bubbles(Role.USER)][-1:] == ["c"]
                    and app.user_confirmed("c")
                    and rows(app) == []
                ),
                "c sent once after the restart",
            )
        finally:
            await app.close()
