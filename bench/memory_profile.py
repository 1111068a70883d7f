"""The memory profile: where the app's and its gateway's resident memory goes, beside the baseline.

Written by bench/memory.py from bench/heap.py reports (see `render`). Each column is a process:
the app (`python -m desktop`), its gateway child, and the same-run baseline (a bare
QApplication and its own gateway child). Every resident MB is in one mapping kind; the heaps
are then split by who allocated them: Python objects (pymalloc's arenas, and big objects in
malloc), the C/C++ heap outside Python, and the caches the chat view and window hold.
"""

from __future__ import annotations

from typing import Any

from bench.heap import KINDS

COLUMNS = (
    ("app", "app"),
    ("gateway", "app's gateway"),
    ("base", "bare Qt"),
    ("base_gw", "its gateway"),
)


def _cell(value: float | None, digits: int, width: int = 15) -> str:
    return f"{'-' if value is None else f'{value:,.{digits}f}':>{width}}"


def _row(label: str, values: list[float | None], digits: int = 1) -> str:
    return f"  {label:<36}" + "".join(_cell(v, digits) for v in values)


def _get(report: dict[str, Any], *path: str) -> float | None:
    node: Any = report
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return float(node) if isinstance(node, int | float) else None


def _c_heap(split: dict[str, Any], traced: dict[str, Any]) -> float | None:
    """glibc's bytes in use that are not Python objects: malloc in use + mmapped blocks, less
    the Python objects too big for pymalloc (from the traced run; tracemalloc's own
    bookkeeping, also in malloc there, is not Python's)."""
    in_use = _get(split, "malloc", "in_use")
    mmapped = _get(split, "malloc", "mmapped")
    big = _get(traced, "python", "big")
    if in_use is None or mmapped is None or big is None:
        return None
    return in_use + mmapped - big


def split_of(split: dict[str, Any], traced: dict[str, Any]) -> dict[str, float | None]:
    """One process's resident MB by who holds it; the parts add up to its RSS."""
    kinds = split.get("maps", {}).get("kinds", {})
    if not kinds:
        return {}
    pools = _get(split, "pymalloc", "size") or 0.0
    big = _get(traced, "python", "big")
    heaps = kinds[KINDS[0]] + kinds[KINDS[1]]
    python = None if big is None else pools + big
    c_heap = _c_heap(split, traced)
    rest = None if python is None or c_heap is None else heaps - python - c_heap
    parts: dict[str, float | None] = {
        "Python objects (pymalloc arenas + big ones)": python,
        "C/C++ heap outside Python": c_heap,
        "rest of [heap] + [anon] (free pages, stacks)": rest,
        "Qt + PySide6 library pages": kinds[KINDS[2]],
        "Python library pages": kinds[KINDS[3]],
        "other library pages": kinds[KINDS[4]],
        "fonts (mapped files)": kinds[KINDS[5]],
        "other files, main stack": kinds[KINDS[6]] + kinds[KINDS[7]],
    }
    return parts


def _above(title: str, mine: dict[str, float | None], base: dict[str, float | None]) -> list[str]:
    if not mine or not base:
        return []
    lines = [title]
    total = 0.0
    for what, value in mine.items():
        other = base.get(what)
        if value is None or other is None:
            continue
        total += value - other
        lines.append(f"  {value - other:+7.1f}  {what} ({value:.1f} vs {other:.1f})")
    lines.append(f"  {total:+7.1f}  in all")
    return [*lines, ""]


def render(
    title: str,
    measured: dict[str, float],
    split: dict[str, dict[str, Any]],
    traced: dict[str, dict[str, Any]],
) -> list[str]:
    """The profile's lines. `measured`: the row's own figures (tree, app, baseline); `split`:
    untraced reports by column key (see COLUMNS), `traced`: the same from a traced run."""
    keys = [k for k, _ in COLUMNS]
    cols = [split.get(k, {}) for k in keys]
    tcols = [traced.get(k, {}) for k in keys]
    app_split = split_of(split.get("app", {}), traced.get("app", {}))
    gw_split = split_of(split.get("gateway", {}), traced.get("gateway", {}))
    lines = [
        f"memory profile: {title}",
        "",
        f"The row's own run: app + gateway {measured['tree']:.1f} MB (app {measured['app']:.1f}); "
        f"baseline {measured['base']:.1f} MB (bare QApplication + the same gateway).",
        "The split below is from a second run of the same case with bench/heap.py's probe (its",
        "RSS within about a MB of the row's), Python by file from a third run under tracemalloc",
        "(PYTHONTRACEMALLOC=1; its own bookkeeping left out of every figure).",
        "",
        *_above(
            "Where the app's memory above the bare QApplication goes (MB; app vs bare Qt)",
            app_split,
            split_of(split.get("base", {}), traced.get("base", {})),
        ),
        *_above(
            "...and its gateway's above the baseline's gateway (empty store)",
            gw_split,
            split_of(split.get("base_gw", {}), traced.get("base_gw", {})),
        ),
        "Resident memory by mapping (MB RSS)  " + "".join(f"{name:>15}" for _, name in COLUMNS),
        _row("total", [_get(c, "maps", "rss") for c in cols]),
    ]
    lines += [_row(kind, [_get(c, "maps", "kinds", kind) for c in cols]) for kind in KINDS]
    lines += [
        "",
        "What the two heaps hold (MB)         " + "".join(f"{name:>15}" for _, name in COLUMNS),
        _row("Python small objects: pymalloc arenas", [_get(c, "pymalloc", "size") for c in cols]),
        _row("  in use", [_get(c, "pymalloc", "in_use") for c in cols]),
        _row("  free inside arenas (fragmentation)", [_get(c, "pymalloc", "free") for c in cols]),
        _row("glibc malloc: held from the system", [_get(c, "malloc", "held") for c in cols]),
        _row("  in use", [_get(c, "malloc", "in_use") for c in cols]),
        _row("  free chunks (trimmed, not in RSS)", [_get(c, "malloc", "free") for c in cols]),
        _row("  mmapped blocks (in [anon])", [_get(c, "malloc", "mmapped") for c in cols]),
        _row(
            "  arenas (one per allocating thread)", [_get(c, "malloc", "arenas") for c in cols], 0
        ),
        _row("Python objects > 512 B, in malloc *", [_get(t, "python", "big") for t in tcols]),
        _row(
            "C/C++ heap outside Python *", [_c_heap(c, t) for c, t in zip(cols, tcols, strict=True)]
        ),
        _row("Python in all (tracemalloc) *", [_get(t, "python", "traced") for t in tcols]),
        _row("  code objects (unmarshalled) *", [_get(t, "python", "code") for t in tcols]),
        _row("modules imported", [_get(c, "python", "modules") for c in cols], 0),
        _row("threads", [float(len(c["threads"])) if c.get("threads") else None for c in cols], 0),
        "  * from the traced run (the C/C++ heap: malloc in use + mmapped there less Python's)",
        "",
    ]
    app = split.get("app", {})
    if app.get("held"):
        lines.append("Held by the app's window and chat view (pixels: 4 bytes each)")
        for what, (mb, count) in app["held"].items():
            lines.append(f"  {what:<38}{mb:13.1f} MB  ({count:,})")
        for what, count in app.get("counts", {}).items():
            lines.append(f"  {what:<38}{count:13,}")
        lines.append("")
    for key, name in COLUMNS:
        maps = split.get(key, {}).get("maps", {})
        if maps.get("top"):
            lines.append(
                f"Largest mappings, {name} (MB RSS): "
                + ", ".join(f"{n} {mb:.1f}" for n, mb in maps["top"])
            )
    for key, name in COLUMNS:
        py = traced.get(key, {}).get("python", {})
        if py.get("files"):
            lines += ["", f"Python heap of the {name} by file (traced run; MB, blocks):"]
            lines += [f"  {mb:7.2f}  {count:8,}  {f}" for f, mb, count in py["files"]]
        if key == "app" and py.get("lines"):
            lines += ["", "...by line, code objects left out (classes, enums, data; MB):"]
            lines += [f"  {mb:7.2f}  {where}" for where, mb in py["lines"]]
    return [*lines, ""]
