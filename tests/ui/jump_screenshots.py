"""Screenshots of the "jump to newest" button over a chat read far up, for the README.

Run on a real display, e.g. `xvfb-run -s "-screen 0 1280x800x24" python -m
tests.ui.jump_screenshots docs/screenshots dark`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from desktop.core.models import SessionSummary
from desktop.ui.theme import ThemeMode
from tests.ui.fakes import FakeBackend, assistant, user
from tests.ui.reading_screenshots import NOW, sample_window, settle, shoot

TOPICS = ["WAL mode", "checkpoints", "fsync", "page size", "vacuum", "busy timeouts"]


def backend() -> FakeBackend:
    b = FakeBackend(pid="embedded")
    b.summaries = [
        SessionSummary("s1", "Durable queues", "a long chat", NOW - 60, 120),
        SessionSummary("s2", "Trip to Lisbon", "Day 3: Sintra", NOW - 86400 * 3, 12),
    ]
    rows = []
    for i in range(60):
        topic = TOPICS[i % len(TOPICS)]
        rows.append(user(f"u{i}", f"What about {topic} (question {i + 1})?"))
        rows.append(
            assistant(
                f"a{i}",
                f"For **{topic}**: keep the defaults unless a benchmark on the target disk "
                "says otherwise. Measure before and after, with the real workload.",
            )
        )
    b.messages["s1"] = rows
    return b


def main(target: Path, mode: ThemeMode) -> None:
    with sample_window(backend(), mode) as win:
        view = win.chat_view
        bar = view.verticalScrollBar()
        bar.setValue(bar.maximum() - 4 * view.viewport().height())
        settle()
        # Two replies arrive while the user reads far up: the button counts them.
        view.update_message(user("u-new", "And the checkpoint interval?"))
        view.update_message(assistant("a-new", "Every 1,000 pages by default."))
        view.update_message(assistant("a-new2", "Raise it only for write bursts."))
        shoot(win, target / f"jump-newest-{mode.value}.png")


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")
    out.mkdir(parents=True, exist_ok=True)
    main(out, ThemeMode(sys.argv[2]) if len(sys.argv) > 2 else ThemeMode.LIGHT)
