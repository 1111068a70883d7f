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
# nodeid -> how the test ended ({"outcome", "when", "detail"}): the report shows why a scenario
# has no figure (skipped, errored before recording) instead of leaving its row out.
_outcomes: dict[str, dict[str, str]] = {}

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


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    entry = _outcomes.setdefault(report.nodeid, {"outcome": "passed", "when": "", "detail": ""})
    if entry["outcome"] != "passed":
        return  # the first failure or skip says why
    if report.skipped:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        entry.update(outcome="skipped", when=report.when, detail=reason)
    elif report.failed:
        lines = report.longreprtext.strip().splitlines()
        entry.update(outcome="failed", when=report.when, detail=(lines[-1] if lines else "")[:300])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    out = os.environ.get(FIGURES_ENV)
    if out:
        data = {"figures": _figures, "outcomes": _outcomes}
        Path(out).write_text(json.dumps(data, indent=1), encoding="utf-8")
