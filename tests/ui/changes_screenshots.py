"""Screenshots of a reply's "2 files changed" card (expanded, one file's diff open) and of the
Review and restore dialog with a checkpoint's diff, and the same dialog on a gateway with
checkpoints off, in light and dark.

The real window with a scripted backend; the reply's tools are what Hermes' tool.complete
left on it (inline_diff), the checkpoint state what rollback.list/diff answer. Run e.g.
`QT_QPA_PLATFORM=offscreen python -m tests.ui.changes_screenshots docs/screenshots`.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from desktop.core.chats.file_changes import record_tool_change
from desktop.core.models import ChatMessage, Checkpoint, RollbackState, ToolCall
from desktop.core.profile.agent.rollback import CHECKPOINTS_OFF
from desktop.ui.chat.restore_dialog import RestoreDialog
from desktop.ui.platform.tray import Tray
from desktop.ui.theme import ThemeManager, ThemeMode
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.main_window import MainWindow, ProfileEntry
from tests.ui.fakes import FakeBackend, assistant, user

WORK = "/home/me/project"
PARSER_DIFF = (
    f"a/{WORK}/src/dates.py \u2192 b/{WORK}/src/dates.py\n"
    "@@ -12,7 +12,9 @@ def parse(text):\n"
    "     text = text.strip()\n"
    "-    return datetime.strptime(text, '%d/%m/%Y')\n"
    "+    for fmt in ('%Y-%m-%d', '%d/%m/%Y'):\n"
    "+        with suppress(ValueError):\n"
    "+            return datetime.strptime(text, fmt)\n"
    "+    raise ValueError(f'not a date: {text!r}')\n"
)
NOTES_DIFF = (
    f"a/{WORK}/CHANGELOG.md \u2192 b/{WORK}/CHANGELOG.md\n"
    "@@ -1,3 +1,4 @@\n # Changelog\n+- Dates in ISO form (2026-12-02) are read too.\n"
)
CHECKPOINT = "4ded15921bab3bf1f406b528565c71adbdec9f52"
GIT_DIFF = (
    "diff --git a/src/dates.py b/src/dates.py\n--- a/src/dates.py\n+++ b/src/dates.py\n"
    + PARSER_DIFF.split("\n", 1)[1]
)


def reply() -> ChatMessage:
    msg = assistant("a1", "Done: `parse` now reads ISO dates too, and the changelog says so.")
    for n, (path, diff) in enumerate(
        ((f"{WORK}/src/dates.py", PARSER_DIFF), (f"{WORK}/CHANGELOG.md", NOTES_DIFF))
    ):
        call = ToolCall(id=f"t{n}", name="patch", args=path, done=True)
        record_tool_change(call, {"args": {"path": path}, "inline_diff": diff})
        msg.tools.append(call)
    return msg


def main(out: Path) -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    theme = ThemeManager(app, ThemeMode.LIGHT)
    for mode, name in ((ThemeMode.LIGHT, "light"), (ThemeMode.DARK, "dark")):
        b = FakeBackend(pid="p1")
        prompt = user("u1", "Make the date parser read ISO dates and note it in the changelog")
        b.messages = {"s1": [prompt, reply()]}
        b.rollbacks["s1"] = RollbackState(
            True, "", (Checkpoint(CHECKPOINT, prompt.created_at + 2),), {CHECKPOINT: GIT_DIFF}, True
        )
        with tempfile.TemporaryDirectory() as tmp:
            settings = QSettings(str(Path(tmp) / "ui.ini"), QSettings.Format.IniFormat)
            win = MainWindow(
                [ProfileEntry("Local Hermes", ProfileBridge(b))], settings, tray=Tray()
            )
            win.resize(1040, 760)
            theme.theme_changed.connect(win.set_colors)
            theme.set_mode(mode)
            win.set_colors(theme.colors)
            win.show()
            win.open_session("s1")
            for _ in range(10):
                app.processEvents()
            view = win.chat_view
            msg = view.message("a1")
            assert msg is not None
            view.bubbles.activate(msg, "changes", 0)
            view.bubbles.activate(msg, "change_file", 0)
            view.chat_model.flush()
            for _ in range(10):
                app.processEvents()
            win.grab().save(str(out / f"changes-card-{name}.png"))
            dialog = RestoreDialog(b, "s1", msg, view.messages(), colors=theme.colors, parent=win)
            dialog.show()
            for _ in range(10):
                app.processEvents()
            dialog.grab().save(str(out / f"changes-restore-{name}.png"))
            b.emit("on_rollback", "s1", RollbackState(reason=CHECKPOINTS_OFF, loaded=True))
            app.processEvents()
            dialog.grab().save(str(out / f"changes-restore-off-{name}.png"))
            dialog.close()
            win.close()


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots"))
