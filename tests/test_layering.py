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
            m for m in _imports(p) if m.startswith(("desktop.ui", "desktop.app"))
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
    sides = ("desktop.core", "desktop.gateway", "desktop.ui", "desktop.app")
    assert _modules("common"), "desktop/common is missing"
    assert _importing(_modules("common"), sides) == {}


def test_exactly_one_client_module_imports_websockets() -> None:
    client_side = _modules("core") + _modules("ui") + [PKG / "app.py"]
    users = [
        str(p.relative_to(PKG))
        for p in client_side
        if p.exists() and any(m.split(".")[0] == "websockets" for m in _imports(p))
    ]
    assert users == ["core/transport.py"], users


def test_ui_never_imports_the_transport() -> None:
    bad = {
        str(p.relative_to(PKG)): sorted(
            m
            for m in _imports(p)
            if m.split(".")[0] in {"websockets", "socket", "httpx"}
            or m in {"desktop.core.transport"}
        )
        for p in _modules("ui")
    }
    assert {k: v for k, v in bad.items() if v} == {}
