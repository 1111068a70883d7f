"""The benchmark table names the commit it comes from, and so does every row not rerun."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bench.__main__ import _stale, table
from bench.common import Result, commit_label


def test_table_names_its_commit_and_a_stale_row_names_its_own() -> None:
    fresh = Result("idle", "connected and idle", "<= 1 %", 0.03, "%", met=True, commit="new1234")
    old = Result("memory", "RSS", "<= 150 MB", 86.4, "MB", met=True, note="x", commit="old5678")
    kept = _stale(old)
    text = table([fresh, kept], "new1234")

    assert "Generated from commit new1234" in text
    row = next(line for line in text.splitlines() if line.startswith("| memory"))
    assert "not rerun in this run**; from commit old5678; x" in row
    assert _stale(kept) == kept  # kept again by a later run: still names where it came from


def test_table_names_the_machine_its_baselines_come_from() -> None:
    import platform

    row = Result("idle", "connected and idle", "<= 1 %", 0.03, "%", met=True)
    line = next(x for x in table([row], "c0ffee1").splitlines() if x.startswith("Machine:"))

    assert platform.release() in line  # the kernel: the same code's baseline moved with it
    assert f"{os.cpu_count()} CPUs" in line and "PySide6 6." in line and "Python 3." in line


def test_commit_label_is_a_commit_of_this_checkout() -> None:
    label = commit_label()
    assert label.split()[0].isalnum() and len(label.split()[0]) >= 7


def test_the_growth_rows_bring_their_plot_into_the_table(tmp_path: Path, monkeypatch: Any) -> None:
    import bench.__main__ as runner

    plot = tmp_path / "bench-growth.png"
    monkeypatch.setattr(runner, "GROWTH_PLOT", plot)
    row = Result("growth", "chats: RSS at 10,000 over 100", "flat", 150.0, "MB", met=True)
    assert "bench-growth.png" not in table([row], "c0ffee1")  # no plot drawn: none shown
    plot.write_bytes(b"\x89PNG")
    assert "![memory and first paint over store sizes](bench-growth.png)" in table([row], "c")


def test_a_report_written_by_an_earlier_run_leaves_the_commit_clean(tmp_path: Path) -> None:
    """A run after a first one (its reports not committed yet) measures the committed code: it
    is stamped with the commit alone; a changed source file still makes it "uncommitted"."""
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "docs" / "bench-profiles").mkdir(parents=True)
    files = ["docs/benchmarks.md", "docs/bench-profiles/results.json", "docs/reliability.md"]
    for name in [*files, "app.py"]:
        (tmp_path / name).write_text("one\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    for name in files:
        (tmp_path / name).write_text("two\n")
    assert "uncommitted" not in commit_label(tmp_path)
    (tmp_path / "app.py").write_text("two\n")
    assert commit_label(tmp_path).endswith("+ uncommitted changes")
