"""Start-up: process start to first painted window and to online with the embedded gateway.

`python -m desktop` prints `FIRST_PAINT <monotonic>` and `ONLINE <monotonic>` when
HERMES_QT_BENCH_STARTUP=1; both are timed from the moment the process is spawned.
"""

from __future__ import annotations

import argparse
import io
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, Result, child_env, child_report, emit, run_child, skipped

BENCH = "startup"
HOOK_ENV = "HERMES_QT_BENCH_STARTUP"
RUNS = 3
NO_HOOK = "the app printed no FIRST_PAINT/ONLINE lines"


def profile_startup() -> str:
    """cProfile of `python -m desktop` from start to online, kept for a missed target."""
    import pstats

    from bench.common import PROFILES

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "startup.prof"
        app_hook([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "desktop"])
        if not out.exists():
            return ""
        text = io.StringIO()
        stats = pstats.Stats(str(out), stream=text)
        stats.strip_dirs().sort_stats("cumulative").print_stats(30)
        stats.sort_stats("tottime").print_stats(20)
    PROFILES.mkdir(parents=True, exist_ok=True)
    (PROFILES / "startup.txt").write_text(
        "python -m desktop, start to online (the frozen build runs the same code)\n\n"
        + text.getvalue(),
        encoding="utf-8",
    )
    return "; profile startup.txt"


def app_hook(command: list[str] | None = None, timeout: float = 20.0) -> tuple[float, float] | None:
    """(first paint, online) seconds after spawning the app (`python -m desktop` unless
    `command` is given), or None without hooks."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        proc = subprocess.Popen(
            [*(command or [sys.executable, "-m", "desktop"]), "--data-dir", tmp],
            cwd=ROOT,
            env=child_env(**{HOOK_ENV: "1"}),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        marks: dict[str, float] = {}
        try:
            assert proc.stdout is not None
            deadline = started + timeout
            # An app without the hook may run silently: never block past the deadline.
            while len(marks) < 2 and (remaining := deadline - time.monotonic()) > 0:
                readable, _, _ = select.select([proc.stdout], [], [], remaining)
                if not readable:
                    break
                line = proc.stdout.readline()
                if not line:
                    break
                word, _, value = line.strip().partition(" ")
                if word in ("FIRST_PAINT", "ONLINE"):
                    marks[word] = float(value) - started
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if len(marks) < 2:
            return None
        return marks["FIRST_PAINT"], marks["ONLINE"]


FROZEN = ROOT / "build" / "pyinstaller" / "dist" / "hermes-qt" / "hermes-qt"
SOURCES = ("desktop", "packaging", "pyproject.toml")
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def frozen_is_stale() -> bool:
    """Whether a source file changed after the frozen bundle was built."""
    built = FROZEN.stat().st_mtime
    for name in SOURCES:
        path = ROOT / name
        files = [path] if path.is_file() else (p for p in path.rglob("*") if p.is_file())
        if any("__pycache__" not in f.parts and f.stat().st_mtime > built for f in files):
            return True
    return False


def drop_page_cache() -> bool:
    """Empty the kernel's page cache (root only): the next start reads the bundle from disk."""
    try:
        subprocess.run(["sync"], check=False, timeout=60)
        DROP_CACHES.write_text("3\n")
    except OSError:
        return False
    return True


def frozen_rows(bare: float) -> list[Result]:
    """Start-up of the frozen one-folder build (packaging/build.py; the .deb ships it)."""
    name = "frozen build: process start -> first painted window"
    if not FROZEN.exists():
        return [skipped(BENCH, name, "<= 0.8 s warm", "no bundle: run packaging/build.py")]
    command = [str(FROZEN)]
    cold = app_hook(command, timeout=60) if drop_page_cache() else None
    warm = [h for h in (app_hook(command) for _ in range(RUNS)) if h is not None]
    if not warm:
        return [skipped(BENCH, name, "<= 0.8 s warm", NO_HOOK)]
    first = min(h[0] for h in warm)
    stale = "; BUNDLE OLDER THAN THE SOURCES" if frozen_is_stale() else ""
    rows = [
        Result(
            BENCH,
            f"{name}, warm",
            "<= 0.8 s",
            first,
            "s",
            bare,
            "bare PySide6 QWidget (python)",
            first <= 0.8,
            f"{FROZEN.relative_to(ROOT)} with {HOOK_ENV}=1, empty data dir; best of "
            f"{len(warm)} runs{stale}" + ("" if first <= 0.8 else profile_startup()),
        )
    ]
    if cold is None:
        rows.append(skipped(BENCH, f"{name}, cold", "reported", "page cache cannot be dropped"))
    else:
        rows.append(
            Result(
                BENCH,
                f"{name}, cold",
                "reported",
                cold[0],
                "s",
                first,
                "the same, warm",
                None,
                "page cache dropped (echo 3 > /proc/sys/vm/drop_caches) before one run; "
                f"online {cold[1]:.2f} s",
            )
        )
    return rows


def child_bare(spawned: float) -> dict[str, float]:
    from PySide6.QtWidgets import QWidget

    from bench.qtsupport import application, pump_until

    application()
    painted: list[float] = []

    class Probe(QWidget):
        def paintEvent(self, _e: object) -> None:
            painted.append(time.monotonic())

    w = Probe()
    w.resize(1000, 700)
    w.show()
    pump_until(lambda: bool(painted), 10)
    return {"first_paint": painted[0] - spawned}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.startup")
    p.add_argument("--child", choices=["bare"])
    p.add_argument("--spawned", type=float, default=0.0)
    args = p.parse_args(argv)
    if args.child:
        child_report(child_bare(args.spawned))
        return 0

    def spawn(kind: str) -> dict[str, float]:
        return run_child(
            ["-m", "bench.startup", "--child", kind, "--spawned", repr(time.monotonic())], 60
        )

    bare = min(spawn("bare")["first_paint"] for _ in range(RUNS))
    hooked = [h for h in (app_hook() for _ in range(RUNS)) if h is not None]
    if not hooked:
        emit([skipped(BENCH, "process start -> first painted window", "<= 0.8 s", NO_HOOK)])
        emit(frozen_rows(bare))
        return 0
    first = min(h[0] for h in hooked)
    online = min(h[1] for h in hooked)
    how = f"python -m desktop with {HOOK_ENV}=1, empty data dir; best of {len(hooked)} runs"
    emit(
        [
            *frozen_rows(bare),
            Result(
                BENCH,
                "process start -> first painted window",
                "<= 0.8 s",
                first,
                "s",
                bare,
                "bare PySide6 QWidget",
                first <= 0.8,
                how,
            ),
            Result(
                BENCH,
                "process start -> online (embedded gateway)",
                "<= 1.5 s",
                online,
                "s",
                bare,
                "bare PySide6 QWidget first paint",
                online <= 1.5,
            ),
        ]
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
