"""The package's layering rules, checked by reading every module's imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "desktop"
QT_ROOTS = {"PySide6", "shiboken6", "qasync", "PyQt5", "PyQt6"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _modules(sub: str) -> list[Path]:
    return sorted((PKG / sub).rglob("*.py"))


@pytest.mark.parametrize("layer", ["core", "gateway", "common"])
def test_core_and_gateway_import_no_qt(layer: str) -> None:
    offenders = {
        str(p.relative_to(PKG)): sorted(m for m in _imports(p) if m.split(".")[0] in QT_ROOTS)
        for p in _modules(layer)
    }
    offenders = {k: v for k, v in offenders.items() if v}
    assert offenders == {}, f"Qt imported outside desktop/ui: {offenders}"


def test_core_does_not_import_ui_or_gateway_server() -> None:
    bad = {
        str(p.relative_to(PKG)): sorted(
            m for m in _imports(p) if m.startswith(("desktop.ui", "desktop.app.main"))
        )
        for p in _modules("core") + _modules("gateway")
    }
    assert {k: v for k, v in bad.items() if v} == {}


def _importing(modules: list[Path], prefixes: tuple[str, ...]) -> dict[str, list[str]]:
    bad = {
        str(p.relative_to(PKG)): sorted(
            m
            for m in _imports(p)
            if m in prefixes or m.startswith(tuple(f"{x}." for x in prefixes))
        )
        for p in modules
    }
    return {k: v for k, v in bad.items() if v}


def test_embedded_gateway_stands_alone_without_the_client_core() -> None:
    # What both sides need (clock, JSON codec, atomic writes, shared limits) is in desktop.common.
    assert _importing(_modules("gateway"), ("desktop.core",)) == {}


def test_client_core_does_not_import_the_embedded_gateway() -> None:
    assert _importing(_modules("core"), ("desktop.gateway",)) == {}


def test_common_imports_neither_side() -> None:
    sides = ("desktop.core", "desktop.gateway", "desktop.ui", "desktop.app.main")
    assert _modules("common"), "desktop/common is missing"
    assert _importing(_modules("common"), sides) == {}


def test_exactly_one_client_module_imports_websockets() -> None:
    client_side = _modules("core") + _modules("ui") + _modules("app")
    users = [
        str(p.relative_to(PKG))
        for p in client_side
        if p.exists() and any(m.split(".")[0] == "websockets" for m in _imports(p))
    ]
    assert users == ["core/link/transport.py"], users


def test_ui_never_imports_the_transport() -> None:
    bad = {
        str(p.relative_to(PKG)): sorted(
            m
            for m in _imports(p)
            if m.split(".")[0] in {"websockets", "socket", "httpx"}
            or m in {"desktop.core.link.transport"}
        )
        for p in _modules("ui")
    }
    assert {k: v for k, v in bad.items() if v} == {}


# The packages from the bottom up: a module may import its own package and those listed before
# it, never one listed after it. `desktop.gateway` stands beside the client (common only).
ORDER = [
    "desktop.common",
    "desktop.core",  # errors, models, observers, listeners, keys: plain values and interfaces
    "desktop.core.link",
    "desktop.core.disk",
    "desktop.core.chats",
    "desktop.core.delivery",
    "desktop.core.profile.agent",  # slash commands, model switch, steering, busy default
    "desktop.core.profile",
    "desktop.gateway.wire",  # faults, frame limits, text: what any gateway module may send
    "desktop.gateway.providers",
    "desktop.gateway.sessions",
    "desktop.gateway.rpc",
    "desktop.gateway",  # cli, lock
    "desktop.ui.platform",
    "desktop.ui",  # theme, backend seam, shortcuts table
    "desktop.ui.render",
    "desktop.ui.chat",
    "desktop.ui.compose",
    "desktop.ui.sessions",
    "desktop.ui.settings",
    "desktop.ui.agent",  # the agent's work above the composer: task list, subagents, processes
    "desktop.ui.window.pane",  # the open chat's pane: header, approvals, status, toasts
    "desktop.ui.window",
    "desktop.app",
    "desktop",
]
# Siblings that must not know each other (the ORDER alone would let a later one import an earlier).
APART = [
    ("desktop.gateway.wire", "desktop.core"),
    ("desktop.gateway.providers", "desktop.core"),
    ("desktop.gateway.sessions", "desktop.core"),
    ("desktop.gateway.rpc", "desktop.core"),
    ("desktop.gateway", "desktop.core"),
    ("desktop.ui.chat", "desktop.ui.compose"),
    ("desktop.ui.chat", "desktop.ui.sessions"),
    ("desktop.ui.chat", "desktop.ui.settings"),
    ("desktop.ui.compose", "desktop.ui.sessions"),
    ("desktop.ui.compose", "desktop.ui.settings"),
    ("desktop.ui.sessions", "desktop.ui.settings"),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(module: str) -> str:
    """The most specific ORDER entry that holds `module`."""
    best = ""
    for pkg in ORDER:
        if (module == pkg or module.startswith(pkg + ".")) and len(pkg) > len(best):
            best = pkg
    return best


def _all_imports() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in PKG.rglob("*.py"):
        found[_module_name(path)] = {m for m in _imports(path) if m.startswith("desktop.")}
    return found


def test_every_package_is_placed_in_the_order() -> None:
    folders = {
        _module_name(p.parent / "__init__.py") for p in PKG.rglob("__init__.py") if p.parent != PKG
    }
    unplaced = sorted(f for f in folders if f not in ORDER)
    assert unplaced == [], f"packages missing from ORDER: {unplaced}"


def test_packages_import_only_downwards() -> None:
    rank = {pkg: i for i, pkg in enumerate(ORDER)}
    back = []
    for module, imported in sorted(_all_imports().items()):
        here = _package_of(module)
        for target in sorted(imported):
            there = _package_of(target)
            if there and rank[there] > rank[here]:
                back.append(f"{module} -> {target}")
    assert back == [], "imports against the package order:\n" + "\n".join(back)


def test_apart_siblings_do_not_import_each_other() -> None:
    crossing = []
    for module, imported in sorted(_all_imports().items()):
        here = _package_of(module)
        for a, b in APART:
            for src, dst in ((a, b), (b, a)):
                if here == src and any(_package_of(t) == dst for t in imported):
                    crossing.append(f"{module} -> {dst}")
    assert crossing == [], crossing


def _import_graph() -> dict[str, set[str]]:
    """Module -> the desktop modules it imports at run time (TYPE_CHECKING blocks left out)."""
    names = {_module_name(p) for p in PKG.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in PKG.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        deps: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                node.body = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                deps.update(
                    m
                    for m in (node.module, *(f"{node.module}.{a.name}" for a in node.names))
                    if m in names
                )
        graph[_module_name(path)] = deps - {_module_name(path)}
    return graph


def test_no_import_cycles() -> None:
    graph = _import_graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert cycles == [], cycles
