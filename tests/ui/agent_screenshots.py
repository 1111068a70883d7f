"""Screenshots of the agent views (approval, clarify, usage) against a real Hermes 0.20.1.

The real window and profile controller talk to `hermesx serve` driven by the scripted fake
provider, as in tests/core/test_hermes_agent.py. Run on a real display, e.g.
`xvfb-run -s "-screen 0 1280x800x24" python -m tests.ui.agent_screenshots docs/screenshots`.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import qasync
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from desktop.core.models import Role
from desktop.ui.chat.approval import ApprovalCard
from desktop.ui.platform.tray import Tray
from desktop.ui.theme import ThemeManager, ThemeMode
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.main_window import MainWindow, ProfileEntry
from tests.core.test_hermes_agent import Agent, agent, chmod_turn, clarify_turn
from tests.support.hermes_env import HERMES_0201


async def shown(predicate: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    """Wait for something the window shows (widgets have no single change signal to await)."""
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.05)
    print(f"shown: {what}")


async def settle(win: MainWindow) -> None:
    win.chat_view.chat_model.flush()
    for _ in range(10):
        QApplication.processEvents()
        await asyncio.sleep(0.02)


async def run(out: Path, tmp: Path) -> None:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    ThemeManager(app, ThemeMode.LIGHT)
    async with agent(tmp, HERMES_0201) as a:
        a.fake.side_reply = "Shared scratch file"  # the chat's title (and not a smart verdict)
        settings = QSettings(str(tmp / "ui.ini"), QSettings.Format.IniFormat)
        win = MainWindow(
            [ProfileEntry("Hermes 0.20.1", ProfileBridge(a.ctl))], settings, tray=Tray()
        )
        win.resize(1040, 720)
        win.show()
        win.activateWindow()  # keyboard focus, so the card's focus ring shows
        try:
            await shoot_approval(a, win, out)
            await shoot_clarify(a, win, out)
        finally:
            win.close()
            win.deleteLater()


async def shoot_approval(a: Agent, win: MainWindow, out: Path) -> None:
    a.fake.script = chmod_turn(a.scratch)
    win.focus_composer()
    win.composer.edit.setPlainText("Make scratch.txt writable for everyone")
    win.composer._on_edit_submit()
    await shown(lambda: bool(win.approvals.findChildren(ApprovalCard)), "approval card")
    await settle(win)
    win.grab().save(str(out / "agent-approval.png"))
    card = win.approvals.findChildren(ApprovalCard)[0]
    card.buttons[0].click()  # Allow once
    key = win.session_key or ""
    conv = a.conv(key)
    replies = lambda: [m for m in conv.messages if m.role is Role.ASSISTANT]  # noqa: E731
    await shown(lambda: not conv.running and any(m.usage for m in replies()), "reply with usage")
    reply = next(m for m in conv.messages if m.role is Role.ASSISTANT)
    win.chat_view.bubbles.activate(reply, "thinking", 0)  # the reasoning fold, opened
    win.chat_view.bubbles.activate(reply, "tool", 0)  # the tool row with its result
    await settle(win)
    win.grab().save(str(out / "agent-usage.png"))


async def shoot_clarify(a: Agent, win: MainWindow, out: Path) -> None:
    a.fake.script = clarify_turn()
    win.composer.edit.setPlainText("Deploy the new build")
    win.composer._on_edit_submit()
    await shown(
        lambda: any(c.request.kind == "clarify" for c in win.approvals.findChildren(ApprovalCard)),
        "clarify card",
    )
    await settle(win)
    win.grab().save(str(out / "agent-clarify.png"))
    card = win.approvals.findChildren(ApprovalCard)[0]
    card.buttons[0].click()
    conv = a.conv(win.session_key or "")
    await shown(lambda: not conv.running, "clarify answered")


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication(sys.argv)
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory() as tmp, loop:
        loop.run_until_complete(run(out, Path(tmp)))


if __name__ == "__main__":
    main()
