"""Screenshots of a chat list with pinned chats on top and an archived one, for the README.

Run on a real display, e.g. `xvfb-run -s "-screen 0 1280x800x24" python -m
tests.ui.organise_screenshots docs/screenshots dark`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from PySide6.QtGui import QPainter

from desktop.core.models import SessionSummary
from desktop.ui.theme import ThemeMode
from tests.ui.fakes import FakeBackend, assistant, user
from tests.ui.reading_screenshots import NOW, sample_window, settle, shoot


def backend() -> FakeBackend:
    b = FakeBackend(pid="embedded")
    b.summaries = [
        SessionSummary(
            "s4", "Release checklist", "Tag, then build the wheels", NOW - 86400 * 9, 8, pinned=True
        ),
        SessionSummary("s1", "Durable queues", "WAL mode keeps readers going", NOW - 60, 12),
        SessionSummary("s2", "Trip to Lisbon", "Day 3: Sintra", NOW - 86400 * 3, 12),
        SessionSummary(
            "s3", "Old tax questions", "Keep receipts 6 years", NOW - 86400 * 40, 4, archived=True
        ),
    ]
    b.messages["s1"] = [user("u2", "Is WAL mode safe on a network drive?")]
    b.messages["s4"] = [
        user("u3", "Draft the release notes for 2.1"),
        user("u1", "What is left before the release?"),
        assistant("a1", "Tag the commit, then build the wheels and the AppImage."),
    ]
    return b


def shoot_popup(win: Any, path: Path) -> None:
    """The window with the Ctrl+R popup drawn over it where it opened."""
    image = win.grab()
    popup = win.prompt_search
    painter = QPainter(image)
    painter.drawPixmap(win.mapFromGlobal(popup.pos()), popup.grab())
    painter.end()
    image.save(str(path))
    print(f"saved {path}")


def main(target: Path, mode: ThemeMode) -> None:
    with sample_window(backend(), mode) as win:
        win.sidebar.select("s4")
        settle()
        shoot(win, target / f"chat-list-pinned-{mode.value}.png")
        win.sidebar.select("s2")
        settle()
        win.chat_admin.delete_selected()
        settle()
        shoot(win, target / f"delete-undo-{mode.value}.png")
        win.chat_admin.undo.undo()
        win.open_session("s4")
        win.search_prompts()
        settle()
        win.prompt_search.filter.setText("release")
        settle()
        shoot_popup(win, target / f"prompt-search-{mode.value}.png")
        win.prompt_search.hide()


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")
    out.mkdir(parents=True, exist_ok=True)
    main(out, ThemeMode(sys.argv[2]) if len(sys.argv) > 2 else ThemeMode.LIGHT)
