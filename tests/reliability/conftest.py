"""Collects each scenario's measured figure; `report.py` turns them into docs/reliability.md."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

FIGURES_ENV = "HQT_RELIABILITY_FIGURES"
_figures: list[dict[str, Any]] = []

RecordFigure = Callable[[str, str, str, bool], None]


@pytest.fixture
def record_figure(request: pytest.FixtureRequest) -> RecordFigure:
    """`record_figure(scenario_id, expected, measured, passed)`: record, then assert `passed`."""

    def record(scenario: str, expected: str, measured: str, passed: bool) -> None:
        row = {
            "scenario": scenario,
            "expected": expected,
            "measured": measured,
            "passed": bool(passed),
            "test": request.node.nodeid,
        }
        request.node.user_properties.append(("figure", json.dumps(row)))
        _figures.append(row)
        assert passed, f"{scenario}: expected {expected}, measured {measured}"

    return record


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    out = os.environ.get(FIGURES_ENV)
    if out:
        Path(out).write_text(json.dumps(_figures, indent=1), encoding="utf-8")
