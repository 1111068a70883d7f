"""Where a process's resident memory is: its mappings, glibc's heap and Python's object arenas.

`report()` runs inside the process it describes (a bench driver in the app, the baseline, or
the gateway child through `bench/heap_site/sitecustomize.py`, which answers SIGUSR1 with it);
`render()` turns the reports of the app, its gateway and the baseline into the text profile.
Kept light (ctypes, os, sys): a driver's imports are resident in the app it measures.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.inapp import REPORT_DIR_ENV

MB = 2**20
# The directory holding the sitecustomize.py that installs that answer (bench/heap_site).
SITE_DIR = Path(__file__).resolve().parent / "heap_site"

# Mapping kinds, in the order the profile lists them; every resident byte is in one.
KINDS = (
    "python arenas + big blocks [anon]",
    "glibc heap [heap]",
    "Qt + PySide6 libraries",
    "Python libraries",
    "other libraries",
    "fonts (mapped files)",
    "other files",
    "stacks and kernel",
)


def _kind(name: str) -> str:
    if name in ("", "[anon]") or name.startswith("[anon:"):
        return KINDS[0]
    if name == "[heap]":
        return KINDS[1]
    if name.startswith("["):
        return KINDS[7]
    base = os.path.basename(name)
    if re.search(r"\.(ttf|otf|ttc|pcf|pfb)(\.gz)?$", base, re.IGNORECASE):
        return KINDS[5]
    if re.search(r"Qt6|Qt[A-Z]\w*\.abi3|pyside6|shiboken6|/qt6?/plugins/", name):
        return KINDS[2]
    if re.search(r"libpython|\.cpython-|python3\.\d+/lib-dynload", name):
        return KINDS[3]
    if ".so" in base:
        return KINDS[4]
    return KINDS[6]


def mappings(pid: int) -> dict[str, Any]:
    """Resident MB of one process by kind, and its largest mappings (file name or [heap])."""
    kinds = dict.fromkeys(KINDS, 0)
    names: dict[str, int] = {}
    name = ""
    with open(f"/proc/{pid}/smaps", encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            if parts and not parts[0].endswith(":"):
                name = parts[5] if len(parts) > 5 else ""
            elif parts and parts[0] == "Rss:":
                kb = int(parts[1])
                kinds[_kind(name)] += kb
                short = os.path.basename(name) if name.startswith("/") else (name or "[anon]")
                names[short] = names.get(short, 0) + kb
    top = sorted(names.items(), key=lambda kv: -kv[1])[:12]
    return {
        "rss": sum(kinds.values()) / 1024,
        "kinds": {k: v / 1024 for k, v in kinds.items()},
        "top": [(n, kb / 1024) for n, kb in top],
    }


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def malloc_stats() -> dict[str, float]:
    """glibc's heap (all arenas): held from the system, in use, free but held, mmapped blocks."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):  # not glibc, or older than 2.33
        return {}
    return {
        "held": info.arena / MB,
        "in_use": info.uordblks / MB,
        "free": info.fordblks / MB,
        "mmapped": info.hblkhd / MB,
        "arenas": _arena_count(libc),
    }


def _arena_count(libc: ctypes.CDLL) -> int:
    """How many malloc arenas (one per thread that allocated, up to 8 x cores), from
    malloc_info's XML."""
    libc.fdopen.restype = ctypes.c_void_p  # a FILE *: the default int would cut it
    libc.fdopen.argtypes = [ctypes.c_int, ctypes.c_char_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    with tempfile.TemporaryFile() as out:
        stream = libc.fdopen(os.dup(out.fileno()), b"w")
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        out.seek(0)
        return len(re.findall(rb"<heap nr=", out.read()))


def pymalloc_stats() -> dict[str, float]:
    """Python's small-object allocator: its arenas (1 MiB each), what is in use in them and
    what is free in them (pools and blocks of objects gone: held until a whole arena empties)."""
    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        sys.stderr.flush()
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode(errors="replace")

    def number(label: str) -> int:
        found = re.search(rf"# {label}\s*=\s*([\d,]+)", text)
        return int(found.group(1).replace(",", "")) if found else 0

    arenas = number("arenas allocated current")
    size = number("bytes in allocated blocks") + number("bytes in available blocks")
    size += number("bytes in unused pools") + number("bytes lost to pool headers")
    size += number("bytes lost to quantization") + number("bytes lost to arena alignment")
    return {
        "arenas": arenas,
        "size": size / MB,
        "in_use": number("bytes in allocated blocks") / MB,
        "free": (size - number("bytes in allocated blocks")) / MB,
    }


def python_stats(top: int = 15) -> dict[str, Any]:
    """Module count; with tracemalloc on (one frame is enough), Python's whole heap (small and
    big objects), the code objects importing unmarshalled, and the largest files and lines
    (lines outside importlib: class bodies, enums, data)."""
    import tracemalloc

    out: dict[str, Any] = {"modules": len(sys.modules)}
    if not tracemalloc.is_tracing():
        return out
    snapshot = tracemalloc.take_snapshot()
    # Above 512 bytes pymalloc hands a block to malloc.
    big = sum(t.size for t in snapshot.traces if t.size > 512)
    files = snapshot.statistics("filename")
    code = sum(s.size for s in files if s.traceback[0].filename.startswith("<frozen importlib"))
    lines = [
        s
        for s in snapshot.statistics("lineno")
        if not s.traceback[0].filename.startswith("<frozen importlib")
    ]
    out.update(
        traced=tracemalloc.get_traced_memory()[0] / MB,
        code=code / MB,
        big=big / MB,
        bookkeeping=tracemalloc.get_tracemalloc_memory() / MB,
        files=[(_short(s.traceback[0].filename), s.size / MB, s.count) for s in files[:top]],
        lines=[
            (f"{_short(s.traceback[0].filename)}:{s.traceback[0].lineno}", s.size / MB)
            for s in lines[:top]
        ],
    )
    return out


def _short(path: str) -> str:
    for marker in ("site-packages/", "/lib/python3.", "/desktop/", "/bench/"):
        if marker in path:
            tail = path.split(marker, 1)[1]
            if marker == "/lib/python3.":
                tail = tail.split("/", 1)[-1]
            return ("desktop/" if marker == "/desktop/" else "") + tail
    return path


def threads() -> list[str]:
    names = []
    for task in sorted(os.listdir("/proc/self/task")):
        try:
            names.append(Path(f"/proc/self/task/{task}/comm").read_text().strip())
        except OSError:
            continue
    return names


def report(**extra: Any) -> dict[str, Any]:
    """This process's split (see the module docstring); `extra`: what its caller adds."""
    return {
        "pid": os.getpid(),
        "command": " ".join(sys.argv[:3]),
        "maps": mappings(os.getpid()),
        "malloc": malloc_stats(),
        "pymalloc": pymalloc_stats(),
        "python": python_stats(),
        "threads": threads(),
        **extra,
    }


async def ask(pid: int, report_dir: str = "", timeout: float = 30.0) -> dict[str, Any]:
    """The report of another process started with the heap site (SIGUSR1, then its file in
    `report_dir`, by default the one this process was given); {} when none came."""
    import asyncio
    import json
    import signal
    import time

    path = Path(report_dir or os.environ[REPORT_DIR_ENV]) / f"{pid}.json"
    path.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            return {}
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.05)  # written through a temporary name: whole once it is there
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def site_env(report_dir: str) -> dict[str, str]:
    """What a bench child needs to answer `ask`, and the gateway it starts (which inherits it):
    the heap site first on its path, then the project (as bench.common.child_env puts it)."""
    root = str(SITE_DIR.parent.parent)
    path = os.pathsep.join(filter(None, [str(SITE_DIR), root, os.environ.get("PYTHONPATH", "")]))
    return {REPORT_DIR_ENV: report_dir, "PYTHONPATH": path}
