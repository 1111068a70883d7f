"""Loads packaging/*.py by path: `packaging` is also the name of a PyPI library in the venv."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
# The source assets the wheel, the frozen build and the installers take.
RESOURCES = ROOT / "resources"


def load(name: str) -> ModuleType:
    """The module packaging/<name>.py, imported once under a private name."""
    key = f"_hermes_packaging_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, PACKAGING / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module
