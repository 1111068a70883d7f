"""The memory profile says where a process's resident memory is, for the app and for a child
process it did not start itself (the gateway), and its parts add up to the RSS it explains."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.heap import KINDS, ask, report, site_env
from bench.memory_profile import render, split_of

ROOT = Path(__file__).resolve().parent.parent


def vm_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and glibc")
def test_a_report_splits_this_process_and_its_kinds_add_up_to_its_rss() -> None:
    before = report()["malloc"]
    held = bytearray(8 * 2**20)  # 8 MB more in malloc (mmapped or in the heap), touched
    held[::4096] = b"x" * len(held[::4096])
    got = report()
    assert abs(got["maps"]["rss"] - vm_rss_mb(os.getpid())) < 2.0
    assert set(got["maps"]["kinds"]) == set(KINDS)
    grew = got["malloc"]["in_use"] + got["malloc"]["mmapped"]
    assert grew - (before["in_use"] + before["mmapped"]) >= 7.5
    assert got["malloc"]["arenas"] >= 1
    assert got["pymalloc"]["arenas"] > 0
    assert 0 < got["pymalloc"]["in_use"] <= got["pymalloc"]["size"]
    assert got["python"]["modules"] == len(sys.modules)
    del held


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and glibc")
def test_a_child_started_with_the_heap_site_answers_with_its_own_report(tmp_path: Path) -> None:
    env = {**os.environ, **site_env(str(tmp_path))}
    # A plain Python child standing in for the gateway: it knows nothing of the bench.
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        env=env,
        stdin=subprocess.PIPE,
        cwd=tmp_path,
    )
    try:
        got = asyncio.run(asyncio.wait_for(_asked(child.pid, tmp_path), timeout=60))
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(10)
    assert got["pid"] == child.pid
    assert got["maps"]["rss"] > 0 and got["pymalloc"]["arenas"] > 0


async def _asked(pid: int, report_dir: Path) -> dict[str, object]:
    # The child installs its handler as it starts (sitecustomize): wait until it has.
    while "SigCgt" not in _status(pid) or not int(_status(pid)["SigCgt"], 16) & (1 << 9):
        await asyncio.sleep(0.05)  # bit 9: SIGUSR1 (10) is caught
    return await ask(pid, str(report_dir))


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def _fake(rss: float, pools: float, big: float, in_use: float, qt: float) -> dict[str, object]:
    kinds = dict.fromkeys(KINDS, 0.0)
    kinds[KINDS[0]] = pools + 3.0  # arenas + 3 MB of mmapped blocks
    kinds[KINDS[1]] = in_use + 0.5
    kinds[KINDS[2]] = qt
    kinds[KINDS[4]] = rss - sum(kinds.values())
    return {
        "maps": {"rss": rss, "kinds": kinds, "top": [("[anon]", kinds[KINDS[0]])]},
        "pymalloc": {"size": pools, "in_use": pools - 0.2, "free": 0.2, "arenas": pools},
        "malloc": {"held": in_use + 0.5, "in_use": in_use, "free": 0.5, "mmapped": 3.0},
        "python": {"modules": 100, "traced": pools + big, "big": big, "code": 5.0},
        "threads": ["python"],
    }


def test_the_split_above_the_baseline_adds_up_to_the_difference_in_rss() -> None:
    app = _fake(rss=100.0, pools=20.0, big=8.0, in_use=18.0, qt=30.0)
    bare = _fake(rss=60.0, pools=12.0, big=4.0, in_use=5.0, qt=20.0)
    parts = split_of(app, app)
    assert sum(v for v in parts.values() if v is not None) == pytest.approx(100.0)
    assert parts["Python objects (pymalloc arenas + big ones)"] == pytest.approx(28.0)
    assert parts["C/C++ heap outside Python"] == pytest.approx(18.0 + 3.0 - 8.0)
    text = render(
        "a case",
        {"tree": 130.0, "app": 100.0, "base": 90.0},
        {"app": app, "base": bare},
        {"app": app, "base": bare},
    )
    start = next(i for i, line in enumerate(text) if line.startswith("Where the app's memory"))
    above = text[start:]
    assert "+40.0  in all" in "\n".join(above)
    assert any("+12.0  Python objects" in line for line in above)


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0, reason="page frames: root only"
)
def test_a_trees_distinct_pages_count_the_libraries_two_processes_share_once() -> None:
    from bench.inapp import tree_distinct_mb, tree_rss_mb

    alone = tree_distinct_mb()
    assert alone is not None and abs(alone - vm_rss_mb(os.getpid())) < 2.0
    # A second interpreter maps the same libpython and libc: RSS counts their pages twice.
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; print('up', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"up\n"
        both, summed = tree_distinct_mb(), tree_rss_mb()
    finally:
        child.communicate(b"")
    assert both is not None
    assert alone < both < summed - 2.0, (alone, both, summed)
