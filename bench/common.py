"""Shared bench plumbing: result rows, the JSON hand-off to the runner, percentiles, profiles."""

from __future__ import annotations

import cProfile
import io
import json
import math
import os
import platform
import pstats
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ROOT / "docs" / "bench-profiles"
RESULT_PREFIX = "BENCH_RESULT "
# Where bench/bigseed.py keeps the data dirs it seeded, for the rest of the run.
SEED_CACHE_ENV = "HERMES_QT_BENCH_SEED_CACHE"


@dataclass(frozen=True, slots=True)
class Result:
    """One table row. `met` is None when the row has no target (informational) or was skipped."""

    bench: str
    name: str
    target: str
    measured: float | None
    unit: str
    baseline: float | None = None
    baseline_label: str = ""
    met: bool | None = None
    note: str = ""
    commit: str = ""  # the code the row was measured on (see `commit_label`)

    @property
    def ratio(self) -> float | None:
        if self.measured is None or not self.baseline:
            return None
        return self.measured / self.baseline

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Result:
        return cls(**data)


# What the reports themselves write: regenerating one leaves the code as committed.
REPORTS = (
    "docs/benchmarks.md",
    "docs/bench-profiles",
    "docs/bench-growth.png",
    "docs/reliability.md",
)


def commit_label(root: Path = ROOT) -> str:
    """The checked-out commit (short hash), "+ uncommitted changes" when the tree is dirty
    (the reports' own files aside: a second run after a first one measures the same code)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=10", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            [
                "git",
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                *(f":(exclude){path}" for path in REPORTS),
            ],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return f"{head} + uncommitted changes" if dirty else head


def machine() -> str:
    """What the figures were measured on: kernel, CPUs, memory, Python and Qt (the baselines
    move with the machine: read a figure against its same-run baseline)."""
    from importlib.metadata import PackageNotFoundError, version

    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next(
                (line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), ""
            )
    except OSError:
        pass
    try:
        ram = f", {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GB RAM"
    except (ValueError, OSError, AttributeError):
        ram = ""
    try:
        qt = f", PySide6 {version('shiboken6')}"  # PySide6's version, whichever wheel holds it
    except PackageNotFoundError:
        qt = ""
    cpus = f"{os.cpu_count()} CPUs" + (f" ({cpu})" if cpu else "")
    return (
        f"{platform.system()} {platform.release()} {platform.machine()}, {cpus}{ram}; "
        f"Python {platform.python_version()}{qt}"
    )


def skipped(bench: str, name: str, target: str, reason: str) -> Result:
    """A row for a benchmark that could not run here, with the reason."""
    return Result(bench, name, target, None, "", note=f"skipped: {reason}")


def emit(results: Sequence[Result]) -> None:
    """Print results for the runner (one JSON line each) and for a human reading the output."""
    for r in results:
        ratio = f"{r.ratio:.2f}x" if r.ratio is not None else "-"
        shown = "-" if r.measured is None else f"{r.measured:.4g} {r.unit}"
        base = "-" if r.baseline is None else f"{r.baseline:.4g} {r.unit}"
        verdict = {True: "met", False: "MISSED", None: ""}[r.met]
        print(f"[{r.bench}] {r.name}: {shown} (baseline {base}, ratio {ratio}) {verdict} {r.note}")
        print(RESULT_PREFIX + json.dumps(r.to_json()), flush=True)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by nearest rank; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def profile_to_file(name: str, func: Callable[[], Any], top: int = 20) -> Path:
    """Run `func` under cProfile and keep the top-`top` cumulative entries as text."""
    prof = cProfile.Profile()
    prof.enable()
    try:
        func()
    finally:
        prof.disable()
    return write_profile(name, prof, top)


def write_profile(name: str, prof: cProfile.Profile, top: int = 20) -> Path:
    """Write a cProfile's top entries (by cumulative and by own time) to docs/bench-profiles/."""
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.strip_dirs().sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    PROFILES.mkdir(parents=True, exist_ok=True)
    path = PROFILES / f"{name}.txt"
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def child_env(**extra: str) -> dict[str, str]:
    """Environment for bench child processes: offscreen Qt, the project importable, no keyring."""
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    # An installed app runs from compiled bytecode; this machine sets PYTHONDONTWRITEBYTECODE,
    # which would time the compiler instead. Cache bytecode in build/ for every child alike.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(ROOT / "build" / "bench-pycache")
    env.update(extra)
    return env


def run_child(args: Sequence[str], timeout: float, **env: str) -> dict[str, Any]:
    """Run `python -m bench.<...>` as a child; it prints one `BENCH_CHILD {json}` line."""
    proc = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("BENCH_CHILD "):
            data: dict[str, Any] = json.loads(line[len("BENCH_CHILD ") :])
            return data
    tail = (proc.stderr or proc.stdout)[-600:]
    raise RuntimeError(f"child {' '.join(args)} exited {proc.returncode}: {tail}")


def child_report(data: dict[str, Any]) -> None:
    """The child side of `run_child`."""
    print("BENCH_CHILD " + json.dumps(data), flush=True)
